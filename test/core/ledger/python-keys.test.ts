// Transition keys byte-equal to the Python original's, end to end through `ledger.tool()`: the request id a
// keyed call stores is the transition key. Vectors: test/fixtures/python-key-vectors.json (regenerate with
// test/fixtures/python-key-vectors.py) and the shared reference's python-vectors.json.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { entryFromRow, toJsonValue } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  argsFingerprint,
  canonicalJson,
  type LedgerEntry,
  MemoryLedgerStorage,
  type ToolTransitionBindingInit,
} from "../../../src/core/index.ts"
import { parseToolArguments, type ToolArguments, ToolArgumentsError } from "../../../src/tools.ts"

interface KeyCase {
  name: string
  args_json: string
  via: "json" | "parse" | "python-only"
  int_paths: string[]
  canonical: string
  args_fingerprint: string
  key: string
  key_without_dispatch: string
}
interface KeyVectors {
  binding: { agent_id: string; policy_version: string; side_effect_class: "keyed_mutate" }
  tool: string
  tool_call_id: string
  cases: KeyCase[]
}

const local = JSON.parse(
  readFileSync(new URL("../../fixtures/python-key-vectors.json", import.meta.url), "utf8"),
) as KeyVectors
const shared = JSON.parse(
  readFileSync(new URL("../../fixtures/python-vectors.json", import.meta.url), "utf8"),
).transition_keys as KeyVectors

/** The request id (= transition key) a keyed call with these arguments stores, via the real ledger. */
async function keyOf(v: KeyVectors, args: Record<string, unknown>, toolCallId?: string): Promise<string> {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  const b = v.binding
  const t = ledger.tool(
    {
      name: v.tool,
      binding: { agentId: b.agent_id, policyVersion: b.policy_version, sideEffectClass: b.side_effect_class },
    },
    async () => "ok",
  )
  await t(args, toolCallId ? { toolCallId } : {})
  const ids: string[] = []
  for await (const e of storage.list()) ids.push(e.requestId)
  expect(ids).toHaveLength(1)
  return ids[0] as string
}

function at(v: unknown, path: string): unknown {
  let cur = v
  for (const p of path.split("/").slice(1)) cur = (cur as Record<string, unknown>)[p]
  return cur
}

describe("keys computed by the Python original (test/fixtures/python-key-vectors.json)", () => {
  for (const c of local.cases) {
    if (c.via === "python-only") continue
    it(`${c.name}: parseToolArguments reproduces canonical JSON, fingerprint and key`, async () => {
      const args = parseToolArguments(c.args_json)
      for (const p of c.int_paths) expect(typeof at(args, p), p).toBe("bigint")
      const clean = { ...args }
      delete clean.tool_call_id
      expect(canonicalJson({ args: [], kwargs: clean })).toBe(c.canonical)
      expect(argsFingerprint(args)).toBe(c.args_fingerprint)
      expect(await keyOf(local, args, local.tool_call_id)).toBe(c.key)
      expect(await keyOf(local, args)).toBe(c.key_without_dispatch)
    })
    if (c.via === "json") {
      it(`${c.name}: plain JSON.parse gives the same key`, async () => {
        expect(await keyOf(local, JSON.parse(c.args_json), local.tool_call_id)).toBe(c.key)
      })
    }
  }

  it("bigint literals are keyed as the exact Python int, never as a string", async () => {
    const byName = (n: string) => local.cases.find((c) => c.name === n) as KeyCase
    const k = (args: Record<string, unknown>) => keyOf(local, args, local.tool_call_id)
    expect(await k({ n: 2n ** 53n + 1n })).toBe(byName("2**53 + 1 as an integer").key)
    expect(await k({ n: -(2n ** 53n + 1n) })).toBe(byName("-(2**53 + 1) as an integer").key)
    expect(await k({ n: 2n ** 53n })).toBe(byName("2**53 as an integer").key)
    expect(await k({ n: 10n ** 20n })).toBe(byName("10**20 as an integer").key)
    expect(await k({ n: 10n ** 21n })).toBe(byName("10**21 as an integer").key)
    expect(await k({ n: 2n ** 64n + 1n })).toBe(byName("2**64 + 1 as an integer").key)
    // A small bigint is the same int as the number.
    expect(await k({ n: 7n })).toBe(await k({ n: 7 }))
    // The old behaviour (bigint stringified) keyed it as the string: it must differ from that.
    expect(await k({ n: 2n ** 53n + 1n })).not.toBe(await k({ n: "9007199254740993" }))
  })

  it("a float integral below 2^53 is the one case a number cannot carry: 10.0 keys as the int 10", async () => {
    const c = local.cases.find((x) => x.via === "python-only") as KeyCase
    const parsed = parseToolArguments(c.args_json)
    expect(parsed.n).toBe(10)
    expect(await keyOf(local, parsed, local.tool_call_id)).not.toBe(c.key)
    expect(canonicalJson(parsed)).toBe('{"n":10}')
  })
})

describe("keys in the shared reference (python-vectors.json, computed by mycelium-runtime 1.34.0)", () => {
  for (const c of shared.cases) {
    it(c.name, async () => {
      expect(await keyOf(shared, parseToolArguments(c.args_json), shared.tool_call_id)).toBe(c.key)
    })
  }
})

/**
 * The rows one call of tool `name` stores, on a fresh memory ledger: the binding is agent "a", policy "p",
 * keyed_mutate plus `extra`.
 */
async function storedRows(
  extra: Partial<ToolTransitionBindingInit>,
  args: Record<string, unknown>,
  meta: { toolCallId?: string } = { toolCallId: "tc-1" },
  name = "charge",
): Promise<LedgerEntry[]> {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" as const, ...extra }
  await ledger.tool({ name, binding }, async () => "ok")(args, meta)
  const rows: LedgerEntry[] = []
  for await (const e of storage.list()) rows.push(e)
  return rows
}

/** The request ids stored by one `charge` call ("tc-1") whose binding takes the thread from `threadFrom`. */
async function storedIds(threadFrom: string, args: Record<string, unknown>): Promise<string[]> {
  const rows = await storedRows({ scopeFrom: { thread_id: threadFrom, run_id: "run" } }, args)
  return rows.map((e) => e.requestId)
}

describe("scopeFrom: the scope is Python's str() of the named argument (resolve_scope)", () => {
  // Computed by the original (v1.34.0, dd64a35): derive_transition_key_for_call("charge", (), kwargs, binding) with
  // agent "a", policy "p", keyed_mutate, scope_from {thread_id: "conversation", run_id: "run"}, kwargs
  // {amount: 10, conversation: <value>, run: "r1", tool_call_id: "tc-1"} (conversation left out for "absent").
  const cases: Array<[string, Record<string, unknown>, string]> = [
    [
      "null is the text None",
      { conversation: null },
      "54c1cc984aabbc382699f4a98b8915b49e0197408175d08f6dc81eb3e027d0a5",
    ],
    [
      'the string "None"',
      { conversation: "None" },
      "c27af9b96abcfa22bfa96a7c75b3b4d101b5a28043e19c6bb1a2059eb7bd41cf",
    ],
    ["a number", { conversation: 7 }, "e9f2a94dc6ee8dbbea39f27f3c9f8f23a9f4ec855892b49ab03067e1ac8c9a04"],
    // Booleans and floats as Python writes them (True, 1e-07), not as JavaScript does (true, 1e-7).
    [
      "true is True",
      { conversation: true },
      "217cd7e61f64d43a869cdd54a1e967f39d527cc432a44690f18d5c5f88cd9c43",
    ],
    [
      "false is False",
      { conversation: false },
      "7843fb87628aecd83638f1fae97ca52fc30cab7ccdf8ce22095ae900509e3f24",
    ],
    [
      'the string "True" (its own key)',
      { conversation: "True" },
      "0a2fc3a9c2e9333b08df41d77a8cc42ee3cbf7b2d04b89e45804e29885c45cf0",
    ],
    [
      "1e-7 is 1e-07",
      { conversation: 1e-7 },
      "118ead62af03f45ea61fd3fc89cc54f7338676d928e4c21839fa64d1bc0c65ba",
    ],
    [
      "0.000001 is 1e-06",
      { conversation: 1e-6 },
      "b59aa65d65f4613faa9d0ac8f4fc971a3121ecf223c5eb215844606999175874",
    ],
    ["0.5", { conversation: 0.5 }, "6f089ddd4842a031c85774e6f4eae052bd18bd05d061b448dccbf9a861ed4850"],
    [
      "2**60, every digit",
      { conversation: 2 ** 60 },
      "b4061b8b0aaa03d5a4a4c8dc2a4893f7e2386d5dc66089e63e8a9923c33c6ef3",
    ],
    ["-0 is -0.0", { conversation: -0 }, "b603277dfc272563776a75d85a99dee722c740438ad1d3e3876cda7bd0a7fe83"],
    ["absent: the ambient scope", {}, "b30cce563c08e42e18d24c767ed5037de32fee1f4a5f7960f8e0e017911f557f"],
  ]
  for (const [name, extra, key] of cases) {
    it(name, async () => {
      expect(await storedIds("conversation", { amount: 10, ...extra, run: "r1" })).toEqual([key])
    })
  }
})

describe("scopeFrom reads only the call's own arguments, as a Python kwargs dict", () => {
  it("a source named like an Object member (constructor, toString, __proto__) that the call lacks is absent", async () => {
    for (const source of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      // The original's key for the same call with the argument absent (the "absent" case above).
      expect(await storedIds(source, { amount: 10, run: "r1" }), source).toEqual([
        "b30cce563c08e42e18d24c767ed5037de32fee1f4a5f7960f8e0e017911f557f",
      ])
    }
  })
})

describe("requestIdFrom strips the value as Python's str.strip() does (request_id_from_argument)", () => {
  // request_id_from_argument("charge_order", "order_id", {"order_id": value}) in the original v1.34.0, run on
  // 2026-12-04: its whitespace has U+001C..U+001F and U+0085 and not U+FEFF, unlike String.prototype.trim().
  const cases: Array<[string, string]> = [
    ["o-1\x1f", "charge_order:order_id:o-1"],
    ["\x85o-1\x1c", "charge_order:order_id:o-1"],
    [" o-1\u3000", "charge_order:order_id:o-1"],
    ["\ufeffo-1\ufeff", "charge_order:order_id:\ufeffo-1\ufeff"],
    ["\ufeff", "charge_order:order_id:\ufeff"],
  ]
  const charge = (order_id: string) =>
    storedRows({ requestIdFrom: "order_id" }, { order_id }, {}, "charge_order")
  for (const [value, id] of cases)
    it(JSON.stringify(value), async () => {
      expect((await charge(value)).map((e) => e.requestId)).toEqual([id])
    })

  it("a value of Python whitespace only (U+001F U+0085) is missing, as in the original", async () => {
    await expect(charge("\x1f\x85")).rejects.toMatchObject({ code: "missing_request_identity" })
  })
})

describe("a provider idempotency key is stored as Python's str() of the argument", () => {
  // extract_provider_idempotency_key({"idem": json.loads(text)}, binding) in the original v1.34.0, run on 2026-12-04.
  it.each([
    [true, "True"],
    [1e-7, "1e-07"],
    [0.00001, "1e-05"],
    [2 ** 60, "1152921504606846976"],
    [7, "7"],
    ["k-1", "k-1"],
  ])("%s is %s", async (idem, stored) => {
    const rows = await storedRows({ providerIdempotencyKeyParam: "idem" }, { idem })
    expect(rows.map((e) => e.providerIdempotencyKey)).toEqual([stored])
  })
})

describe("canonical numbers", () => {
  it("-0 is -0.0, integral numbers are ints until 1e21, beyond that Python's float repr", () => {
    expect(canonicalJson(-0)).toBe("-0.0")
    expect(canonicalJson([0, -0, 0.5])).toBe("[0,-0.0,0.5]")
    expect(canonicalJson(2 ** 53)).toBe("9007199254740992")
    expect(canonicalJson(2 ** 60)).toBe("1152921504606846976")
    expect(canonicalJson(-(2 ** 55))).toBe("-36028797018963968")
    expect(canonicalJson(1e20)).toBe("100000000000000000000")
    expect(canonicalJson(999999999999999900000)).toBe("999999999999999868928")
    expect(canonicalJson(1e21)).toBe("1e+21")
    expect(canonicalJson(-1e21)).toBe("-1e+21")
    expect(canonicalJson(2n ** 70n)).toBe("1180591620717411303424")
    // A boxed Number is a Python float.
    expect(canonicalJson(new Number(1e16))).toBe("1e+16")
    expect(canonicalJson(new Number(10))).toBe("10.0")
  })

  it("a stored row holds bigints within 2^53 as numbers, beyond as decimal strings, boxed floats as numbers", () => {
    expect(toJsonValue({ a: 5n, b: 2n ** 53n + 1n, c: new Number(1e16), d: [-(2n ** 60n)] })).toEqual({
      a: 5,
      b: "9007199254740993",
      c: 1e16,
      d: ["-1152921504606846976"],
    })
  })
})

describe("parseToolArguments", () => {
  it("returns JSON.parse's own object when nothing needs exactness", () => {
    const text = '{"a": [1, 2.5, "x\\u00e9", {"b": null, "c": true}], "big": 9007199254740991, "neg": -3}'
    expect(parseToolArguments(text)).toEqual(JSON.parse(text))
  })

  it("keeps integers beyond 2^53 exact, -0 as the int 0, -0.0 as the float -0", () => {
    const v = parseToolArguments(
      '{"a": 9007199254740993, "b": -18446744073709551617, "c": -0, "d": -0.0, "e": [12345678901234567890]}',
    )
    expect(v.a).toBe(9007199254740993n)
    expect(v.b).toBe(-18446744073709551617n)
    expect(Object.is(v.c, 0)).toBe(true)
    expect(Object.is(v.d, -0)).toBe(true)
    expect(v.e).toEqual([12345678901234567890n])
  })

  it("marks integral floats beyond 2^53 as boxed Numbers; ordinary floats stay numbers", () => {
    const v = parseToolArguments('{"a": 1e16, "b": 9007199254740993.0, "c": 1.5, "d": 1e21, "e": 2.5e-8}')
    expect(v.a).toBeInstanceOf(Number)
    expect(+(v.a as number)).toBe(1e16)
    expect(v.b).toBeInstanceOf(Number)
    expect(v.c).toBe(1.5)
    expect(v.d).toBe(1e21)
    expect(v.e).toBe(2.5e-8)
  })

  it("parses strings with escapes, nesting, whitespace and a __proto__ key exactly as JSON.parse does", () => {
    const text =
      ' {\n "s": "q\\"\\\\\\n\\u00e9\\ud83d\\ude00", "__proto__": {"x": 1}, "n": [ [ ], { } , 9007199254740993 ],\t"t": false } '
    const v = parseToolArguments(text)
    const plain = JSON.parse(text) as Record<string, unknown>
    expect(v.s).toBe(plain.s)
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype)
    expect(Object.hasOwn(v, "__proto__")).toBe(true)
    expect(Object.getOwnPropertyDescriptor(v, "__proto__")?.value).toEqual({ x: 1 })
    expect(v.n).toEqual([[], {}, 9007199254740993n])
    expect(v.t).toBe(false)
  })

  it("duplicate keys: the last wins, as in Python and JSON.parse", () => {
    expect(parseToolArguments('{"a": 1, "a": 9007199254740993}').a).toBe(9007199254740993n)
  })

  it("rejects what is not a JSON object with a typed error", () => {
    for (const bad of ["", "{", "[1]", "1", '"x"', "null", "{'a': 1}", '{"a": NaN}', '{"a": 1} x']) {
      let err: unknown
      try {
        parseToolArguments(bad)
      } catch (e) {
        err = e
      }
      expect(err, bad).toBeInstanceOf(ToolArgumentsError)
      expect((err as ToolArgumentsError).code).toBe("tool_arguments_invalid")
    }
  })

  it("deep nesting fails with the typed error, not a stack overflow", () => {
    const depth = 200_000
    const text = `{"a": ${"[".repeat(depth)}9007199254740993${"]".repeat(depth)}}`
    expect(() => parseToolArguments(text)).toThrow(ToolArgumentsError)
  })

  it("a replay with exact big integers returns the stored result without running again", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const t = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } },
      async (args: ToolArguments) => {
        runs++
        return { got: String(args.n) }
      },
    )
    const text = '{"n": 9007199254740993, "f": 1e16}'
    const first = await t(parseToolArguments(text), { toolCallId: "c1" })
    const again = await t(parseToolArguments(text), { toolCallId: "c1" })
    const explicit = ledger.tool(
      { name: "pay2", binding: { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } },
      async () => {
        runs++
        return 1
      },
    )
    // An explicit request id compares the stored arguments with this call's: bigints must compare equal.
    await explicit(parseToolArguments(text), { requestId: "pay2:order-1" })
    await explicit(parseToolArguments(text), { requestId: "pay2:order-1" })
    expect(first).toEqual({ got: "9007199254740993" })
    expect(again).toEqual(first)
    expect(runs).toBe(2)
  })
})

describe("rows the Python original wrote with integers beyond 2^53", () => {
  const c = local.cases.find((x) => x.name === "nested mix") as KeyCase
  const b = local.binding
  const binding = {
    agentId: b.agent_id,
    policyVersion: b.policy_version,
    sideEffectClass: b.side_effect_class,
  }
  // As the original stores it: exact ints in the JSON text, which JSON.parse reads back rounded.
  const pythonRow = (requestId: string, toolCallId: string | null) =>
    entryFromRow(
      JSON.parse(
        `{"request_id": ${JSON.stringify(requestId)}, "tool": "edge_numbers", "args": [], "kwargs": ` +
          `${c.args_json.slice(0, -1)}${toolCallId ? `, "tool_call_id": "${toolCallId}"` : ""}}, ` +
          `"status": "completed", "terminal_outcome": "COMPLETED", "fence": 1, "result": "python ran it", ` +
          `"started_at": 1780000000.5, "finished_at": 1780000001.5}`,
      ),
    )

  it("a keyed redispatch finds the row by the exact key and replays it: the body never runs", async () => {
    const storage = new MemoryLedgerStorage()
    await storage.set(pythonRow(c.key, local.tool_call_id))
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const t = ledger.tool({ name: local.tool, binding }, async () => {
      runs++
      return "ran twice"
    })
    expect(await t(parseToolArguments(c.args_json), { toolCallId: local.tool_call_id })).toBe("python ran it")
    expect(runs).toBe(0)
  })

  it("an explicit request id whose stored arguments cannot be re-derived exactly fails closed, never runs", async () => {
    const storage = new MemoryLedgerStorage()
    await storage.set(pythonRow("edge_numbers:order-1", null))
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const t = ledger.tool({ name: local.tool, binding }, async () => {
      runs++
      return "ran twice"
    })
    await expect(
      t(parseToolArguments(c.args_json), { requestId: "edge_numbers:order-1" }),
    ).rejects.toMatchObject({
      code: "args_drift",
    })
    expect(runs).toBe(0)
  })
})
