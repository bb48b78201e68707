// parseToolArguments, the package's own parser of a model's arguments (docs/keys.md), keeps a float the text wrote
// as `1e16` as a boxed Number and an integer beyond 2^53 as a bigint. Field specs and the entity check refused both,
// and told the model "Received: {}. Expected: number.", which it can never fix: the runner spent every retry on it.
import { describe, expect, it } from "vitest"
import { bounded, ToolRunner } from "../../../src/core/tools/index.ts"
import { parseToolArguments } from "../../../src/tools.ts"
import { failure } from "./outcome.ts"

const TEXT = '{"amount": 1e16, "id": 9007199254740993, "qty": 9007199254740993.0}'

describe("what parseToolArguments produces passes a field spec", () => {
  it("a boxed Number is a number and, when integral, an integer; a bigint is both; the tool gets primitives", async () => {
    const seen: unknown[] = []
    const t = bounded(
      async (a: Record<string, unknown>) => {
        seen.push(a)
        return "ok"
      },
      {
        name: "transfer",
        schema: { amount: { type: "number" }, id: { type: "integer" }, qty: { type: "integer" } },
      },
    )
    expect(await t(parseToolArguments(TEXT))).toBe("ok")
    // The integer stays exact, as Python's int; the boxed floats arrive as the numbers they hold.
    expect(seen).toEqual([{ amount: 1e16, id: 9007199254740993n, qty: 9007199254740992 }])
    const asNumber = bounded(async (a: { n?: unknown }) => a.n, {
      name: "n",
      schema: { n: { type: "number" } },
    })
    // As pydantic makes a Python int a float; one beyond the doubles is refused there too (it became Infinity).
    expect(await asNumber(parseToolArguments('{"n": 9007199254740993}'))).toBe(9007199254740992)
    const e = await failure(asNumber(parseToolArguments(`{"n": 1${"0".repeat(400)}}`)))
    expect(e.violation).toBe("float_type")
    const items = bounded(async (a: { xs?: unknown }) => a.xs, {
      name: "xs",
      schema: { xs: { type: "array", items: { type: "number" } } },
    })
    expect(await items(parseToolArguments('{"xs": [1.5, 1e16, 12345678901234567890]}'))).toEqual([
      1.5,
      1e16,
      Number(12345678901234567890n),
    ])
  })

  it("a boxed float that is not integral is refused as an integer, with its value in the message", async () => {
    const t = bounded(async (a: { n?: unknown }) => a.n, { name: "n", schema: { n: { type: "integer" } } })
    const e = await failure(t({ n: Object(2.5) }))
    expect(e.violation).toBe("int_from_float")
    expect(e.llmMessage).toContain("Received: 2.5.")
  })

  it("a boxed Number a string field refuses is echoed by its value, not as {}", async () => {
    const t = bounded(async (a: { s?: unknown }) => a.s, { name: "s", schema: { s: { type: "string" } } })
    const e = await failure(t(parseToolArguments('{"s": 1e16}')))
    expect(e.llmMessage).toContain("Received: 10000000000000000.")
    expect(e.llmMessage).not.toContain("{}")
  })
})

describe("what parseToolArguments produces passes the entity check", () => {
  it("a bigint id and a boxed Number id are checked by their digits; the tool gets the primitive", async () => {
    const ids: unknown[] = []
    const t = bounded(
      async (a: { id?: unknown }) => {
        ids.push(a.id)
        return "ok"
      },
      { name: "get", entityParam: "id", entityPattern: "\\d+" },
    )
    expect(await t(parseToolArguments('{"id": 9007199254740993}'))).toBe("ok")
    expect(await t(parseToolArguments('{"id": 1e16}'))).toBe("ok")
    expect(ids).toEqual([9007199254740993n, 1e16])
    const e = await failure(t(parseToolArguments('{"id": -9007199254740993}')))
    expect(e.violation).toBe("scope_entity_pattern")
    expect(e.llmMessage).toContain("Received: -9007199254740993.")
  })
})

describe("ToolRunner", () => {
  it("runs the call at once instead of asking the model to fix what it cannot (it gave up after 2 retries)", async () => {
    let calls = 0
    let asked = 0
    const t = bounded(
      async (a: { amount: number }) => {
        calls++
        return a.amount
      },
      { name: "pay", schema: { amount: { type: "number" } } },
    )
    const r = await new ToolRunner().runWithLlmRetry(t, {
      messages: [],
      toolCallId: "c1",
      args: parseToolArguments('{"amount": 1e16}'),
      invokeLlm: (m) => {
        asked++
        return m
      },
      parseToolCall: () => ({ name: "pay", args: parseToolArguments('{"amount": 1e16}') }),
    })
    expect([r.result, calls, asked]).toEqual([1e16, 1, 0])
  })
})

describe("only a genuine boxed Number is read as one", () => {
  const t = bounded(async (a: { n?: unknown }) => a.n, { name: "n", schema: { n: { type: "integer" } } })
  const scoped = bounded(async (a: { id?: unknown }) => a.id, {
    name: "get",
    entityParam: "id",
    entityPattern: "\\d+",
  })

  it("an object posing as a Number (valueOf, Number.prototype, a Proxy of one) is refused; its valueOf never runs", async () => {
    let ran = 0
    const posers = [
      {
        valueOf: () => {
          ran++
          return 5
        },
      },
      Object.create(Number.prototype),
      new Proxy(Object(5), {}),
      [5],
      Object(5n),
      new Proxy(Object(5), {
        getPrototypeOf() {
          throw new Error("trap")
        },
      }),
    ]
    for (const n of posers) {
      expect((await failure(t({ n }))).violation).toBe("int_type")
      expect((await failure(scoped({ id: n }))).violation).toBe("scope_entity_pattern")
    }
    expect(ran).toBe(0)
  })

  it("a Number subclass with a hostile valueOf or toString: the check and the tool see the number it holds", async () => {
    let ran = 0
    class Hostile extends Number {
      override valueOf(): number {
        ran++
        return 1
      }
      override toString(): string {
        ran++
        return "../other_account"
      }
    }
    expect(await t({ n: new Hostile(7) })).toBe(7)
    const got = await scoped({ id: new Hostile(7) })
    // The primitive the pattern was run on, not the object whose toString would name another account.
    expect(got).toBe(7)
    expect(ran).toBe(0)
  })
})
