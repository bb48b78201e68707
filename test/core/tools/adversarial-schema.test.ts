// Adversarial review of bounded()'s schemas and of what its errors echo back to the model. The arguments are
// what a model can write (JSON.parse output) unless a test says otherwise.
import { describe, expect, it } from "vitest"
import * as z from "zod"
import { bounded, ToolBoundaryError, ToolRegistry } from "../../../src/core/tools/index.ts"
import { failure } from "./outcome.ts"

describe("field spec: what the tool receives is what was checked", () => {
  it("a __proto__ key in an additional_properties object stays an own key and is checked like the others", async () => {
    let received: Record<string, unknown> | undefined
    const t = bounded(
      async (a: { m: Record<string, unknown> }) => {
        received = a.m
        return "ok"
      },
      { name: "m", schema: { m: { type: "object", additional_properties: { type: "object" } } } },
    )
    await t(JSON.parse('{"m": {"__proto__": {"x": "not an object"}}}'))
    const m = received as Record<string, unknown>
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype)
    expect(Object.keys(m)).toEqual(["__proto__"])
    // Before the fix the value became m's prototype: m.x read "not an object", a key never checked as an object.
    expect(m.x).toBeUndefined()
  })

  it("an integer string beyond 2^53 is refused instead of becoming a neighbouring id", async () => {
    const ids: unknown[] = []
    const t = bounded(
      async (a: { id: number }) => {
        ids.push(a.id)
        return a.id
      },
      { name: "get", schema: { id: { type: "integer" } } },
    )
    const e = await failure(t({ id: "9007199254740993" as unknown as number }))
    expect(e.violation).toBe("int_parsing_size")
    expect(e.field).toBe("id")
    expect(ids).toEqual([])
    expect(await t({ id: "9007199254740991" as unknown as number })).toBe(9007199254740991)
    expect(await t({ id: " -42 " as unknown as number })).toBe(-42)
  })

  // A bigint is what parseToolArguments makes of an integer beyond 2^53, so it is one (parsed-numbers.test.ts); what
  // JavaScript would coerce into a number ([1], an object with a valueOf) is still refused.
  it("NaN and Infinity are not integers; -0, 5.0 and a bigint are; arrays and objects posing as numbers are refused", async () => {
    const t = bounded(async (a: { n: number }) => a.n, { name: "n", schema: { n: { type: "integer" } } })
    expect((await failure(t({ n: Number.NaN }))).violation).toBe("finite_number")
    expect((await failure(t({ n: Number.POSITIVE_INFINITY }))).violation).toBe("finite_number")
    expect((await failure(t({ n: "Infinity" as unknown as number }))).violation).toBe("int_parsing")
    expect(await t({ n: 10n as unknown as number })).toBe(10n)
    expect((await failure(t({ n: [1] as unknown as number }))).violation).toBe("int_type")
    expect((await failure(t({ n: { valueOf: () => 1 } as unknown as number }))).violation).toBe("int_type")
    expect(Object.is(await t({ n: -0 }), -0)).toBe(true)
    expect(await t({ n: "5.0" as unknown as number })).toBe(5)
  })

  // Expected results come from pydantic 2.13's lax mode (the original's validator), run on the same inputs.
  it("number and integer text is read as pydantic reads it: decimal only, never hex, octal or binary", async () => {
    const seen: unknown[] = []
    const t = bounded(
      async (a: { x?: unknown; n?: unknown; b?: unknown }) => {
        seen.push(a.x ?? a.n ?? a.b)
        return "ok"
      },
      {
        name: "amounts",
        schema: {
          x: { type: "number", required: false },
          n: { type: "integer", required: false },
          b: { type: "boolean", required: false },
        },
      },
    )
    const refused: [object, string][] = [
      [{ x: "0x10" }, "float_parsing"],
      [{ x: "0b101" }, "float_parsing"],
      [{ x: "0o7" }, "float_parsing"],
      [{ x: " 0X1A " }, "float_parsing"],
      [{ x: "Infinity" }, "float_parsing"],
      [{ n: "5." }, "int_parsing"],
      [{ n: "5.5" }, "int_parsing"],
      [{ b: 0.5 }, "bool_type"],
      [{ b: 2 }, "bool_parsing"],
    ]
    for (const [args, violation] of refused) expect((await failure(t(args))).violation).toBe(violation)
    expect(seen).toEqual([])
    for (const args of [{ x: " 1.5 " }, { x: "1." }, { x: ".5" }, { x: "+1" }, { x: "1E3" }, { n: "5.00" }])
      await t(args)
    expect(seen).toEqual([1.5, 1, 0.5, 1, 1000, 5])
  })

  it("strings with NUL or lone surrogates are strings: a pattern decides, and anchors hold", async () => {
    const t = bounded(async (a: { s: string }) => a.s, {
      name: "s",
      schema: { s: { type: "string", pattern: "^[a-z]+$" } },
    })
    expect((await failure(t({ s: "abc\0" }))).violation).toBe("pattern_mismatch")
    expect((await failure(t({ s: "abc\ud800" }))).violation).toBe("pattern_mismatch")
    expect((await failure(t({ s: "abc\ndef" }))).violation).toBe("pattern_mismatch")
    const free = bounded(async (a: { s: string }) => a.s, { name: "f", schema: { s: { type: "string" } } })
    expect(await free({ s: "a\0\ud800" })).toBe("a\0\ud800")
  })

  it("max_length 0 admits only the empty string; a pattern is tried on the text as sent, never trimmed", async () => {
    const empty = bounded(async (a: { s: string }) => a.s, {
      name: "e",
      schema: { s: { type: "string", max_length: 0 } },
    })
    expect((await failure(empty({ s: "DROP TABLE" }))).violation).toBe("string_too_long")
    expect(await empty({ s: "" })).toBe("")
    const id = bounded(async (a: { s: string }) => a.s, {
      name: "id",
      schema: { s: { type: "string", pattern: "^c\\d+$" } },
    })
    for (const s of ["c1\n", "c1 ", " c1"])
      expect((await failure(id({ s }))).violation).toBe("pattern_mismatch")
    expect(await id({ s: "c1" })).toBe("c1")
  })

  it("max_length is checked before a pattern, so a long string never reaches a backtracking regex", async () => {
    // (a+)+$ backtracks exponentially on "aaa…!": 5,000 characters would not finish. pydantic checks length first.
    const t = bounded(async (a: { s: string }) => a.s, {
      name: "s",
      schema: { s: { type: "string", pattern: "^(a+)+$", max_length: 30 } },
    })
    const e = await failure(t({ s: `${"a".repeat(5_000)}!` }))
    expect(e.violation).toBe("string_too_long")
    expect((await failure(t({ s: "aab!" }))).violation).toBe("pattern_mismatch")
    expect(await t({ s: "aaa" })).toBe("aaa")
    const short = bounded(async (a: { s: string }) => a.s, {
      name: "s",
      schema: { s: { type: "string", pattern: "^x", min_length: 3 } },
    })
    expect((await failure(short({ s: "y" }))).violation).toBe("string_too_short")
  })

  it("extra keys are refused, __proto__ and constructor included", async () => {
    const t = bounded(async (a: { s: string }) => a.s, { name: "s", schema: { s: { type: "string" } } })
    for (const json of ['{"s": "a", "__proto__": {"admin": true}}', '{"s": "a", "constructor": {}}']) {
      const e = await failure(t(JSON.parse(json)))
      expect(e.violation).toBe("unexpected_kwarg")
    }
  })

  it("a getter that changes its answer cannot get an unchecked value past the field spec or zod", async () => {
    const flip = () => {
      let reads = 0
      return {
        get s() {
          reads++
          return reads === 1 ? "ok" : 42
        },
      }
    }
    const seen: unknown[] = []
    const spec = bounded(
      async (a: { s: unknown }) => {
        seen.push(a.s)
        return a.s
      },
      { name: "spec", schema: { s: { type: "string" } } },
    )
    const zod = bounded(
      async (a: { s: unknown }) => {
        seen.push(a.s)
        return a.s
      },
      { name: "zod", schema: z.object({ s: z.string() }) },
    )
    for (const t of [spec, zod]) {
      const outcome = await t(flip()).then(
        (v) => ({ ok: v }),
        (e: ToolBoundaryError) => ({ violation: e.violation }),
      )
      // Either the value checked is the value passed, or the call is refused; never "ok" checked and 42 run.
      if ("ok" in outcome) expect(typeof outcome.ok).toBe("string")
    }
    expect(seen.every((v) => typeof v === "string")).toBe(true)
  })
})

describe("field spec: each argument is read once", () => {
  it("an optional field whose getter later reads undefined or null is checked on its one read", async () => {
    const seen: unknown[] = []
    const search = bounded(
      async (a: { q: string; limit?: unknown }) => {
        seen.push(a.limit)
        return "ok"
      },
      { name: "search", schema: { q: { type: "string" }, limit: { type: "integer", required: false } } },
    )
    for (const later of [undefined, null]) {
      let reads = 0
      const args = {
        q: "x",
        get limit() {
          reads++
          return reads === 1 ? "DROP TABLE" : later
        },
      }
      expect((await failure(search(args))).violation).toBe("int_parsing")
      expect(reads).toBe(1)
    }
    expect(seen).toEqual([])
  })
})

describe("field spec: the keys are listed once", () => {
  it("a Proxy that lists another key the second time cannot pass it unchecked", async () => {
    const pay = bounded((a: Record<string, unknown>) => Object.keys(a), {
      name: "pay",
      schema: { amount: { type: "integer" } },
    })
    let lists = 0
    const args = new Proxy(
      { amount: 5, admin: true },
      {
        ownKeys: () => (lists++ === 0 ? ["amount"] : ["amount", "admin"]),
      },
    )
    expect(await pay(args)).toEqual(["amount"])
    expect(lists).toBe(1)
  })
})

describe("errors fed back to the model echo a bounded amount of what it sent", () => {
  it("a 1 MB string is shown clipped, and the error keeps the whole value", async () => {
    const t = bounded(async (a: { q: string }) => a.q, {
      name: "search",
      schema: { q: { type: "string", max_length: 10 } },
    })
    const q = "x".repeat(1_000_000)
    const e = await failure(t({ q }))
    expect(e.violation).toBe("string_too_long")
    expect(e.actual).toBe(q)
    expect(e.llmMessage.length).toBeLessThan(600)
    expect(e.llmMessage).toMatch(
      /^Tool 'search' failed input validation\. Field: q\. Received: 'x{299}\.\.\.\. /,
    )
    expect(e.llmMessage).toContain("Expected: length of at most 10.")
  })

  it("a two-million-item array is shown as its first items and refused before any item is coerced", async () => {
    const t = bounded(async (a: { ids: number[] }) => a.ids, {
      name: "batch",
      schema: { ids: { type: "array", items: { type: "integer" }, max_length: 100 } },
    })
    let reads = 0
    const ids = new Proxy(
      Array.from({ length: 2_000_000 }, (_, i) => i),
      {
        get(target, key, receiver) {
          if (typeof key === "string" && /^\d+$/.test(key)) reads++
          return Reflect.get(target, key, receiver)
        },
      },
    )
    const e = await failure(t({ ids }))
    expect(e.violation).toBe("too_long")
    expect(e.llmMessage.length).toBeLessThan(600)
    expect(e.llmMessage).toContain("Received: [0, 1, 2,")
    // The items shown in the message, not two million.
    expect(reads).toBeLessThanOrEqual(20)
  })

  it("a huge unexpected key and a huge tool name are clipped wherever they are echoed", async () => {
    const t = bounded(async (a: { s: string }) => a.s, { name: "s", schema: { s: { type: "string" } } })
    const key = "k".repeat(100_000)
    const e = await failure(t({ s: "a", [key]: 1 } as { s: string }))
    expect(e.violation).toBe("unexpected_kwarg")
    expect(e.field).toBe(key)
    expect(e.llmMessage.length).toBeLessThan(1_000)
    expect(e.llmMessage).toContain("s accepts only: s.")
    expect(e.message.length).toBeLessThan(400)
    const registry = new ToolRegistry({ allowed: ["search"] })
    let blocked: unknown
    try {
      registry.validateCall("t".repeat(100_000))
    } catch (err) {
      blocked = err
    }
    expect(blocked).toBeInstanceOf(ToolBoundaryError)
    expect((blocked as ToolBoundaryError).llmMessage.length).toBeLessThan(600)
    expect((blocked as ToolBoundaryError).llmMessage).toContain("Allowed tools: search.")
  })

  it("deeply nested values are shown to a fixed depth, and objects with many keys to their first keys", async () => {
    const t = bounded(async (a: { n: number }) => a.n, { name: "n", schema: { n: { type: "integer" } } })
    let deep: unknown = "bottom"
    for (let i = 0; i < 10_000; i++) deep = [deep]
    const e = await failure(t({ n: deep as number }))
    expect(e.llmMessage).toContain("Received: [[[[[...]]]]].")
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]))
    const e2 = await failure(t({ n: wide as unknown as number }))
    expect(e2.llmMessage.length).toBeLessThan(600)
    expect(e2.llmMessage).toContain("Received: {'k0': 0, 'k1': 1,")
  })
})
