import { describe, expect, it } from "vitest"
import {
  buildTransitionPreimage,
  preimageJson,
  pythonFloatRepr,
  sha256HexJs,
  toJsonValue,
} from "../../../src/adapter-kit.ts"
import {
  argsFingerprint,
  canonicalJson,
  configureSha256,
  type JsonValue,
  sha256,
  sha256Hex,
  transitionKey,
} from "../../../src/core/index.ts"
import { cloneJson } from "../../../src/core/ledger/model/canonical.ts"

// Vectors produced by the Python original (reference §1.4) and by CPython's json.dumps(sort_keys=True,
// separators=(",", ":")) for the rest.
const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } as const

describe("Python-compatible identity vectors", () => {
  const fp = argsFingerprint({ amount: 10, tool_call_id: "tc-1" })

  it("args fingerprint drops bookkeeping keys", () => {
    expect(canonicalJson({ args: [], kwargs: { amount: 10 } })).toBe('{"args":[],"kwargs":{"amount":10}}')
    expect(fp).toBe("55d87e91c28ae8881dfb5ce0d9256f8b753486302dc073530b63edf6fe55384e")
  })

  it("transition key with a dispatch id", () => {
    expect(transitionKey({ tool: "charge", binding, argsFingerprint: fp, dispatchId: "tc-1" })).toBe(
      "3e29769d8451d1efa98a29cdb2cfcb3bea4a2da946fdfc14c7d8db2697226cec",
    )
  })

  it("transition key without a dispatch id", () => {
    expect(transitionKey({ tool: "charge", binding, argsFingerprint: fp })).toBe(
      "96c5f69a37db3c943406bcb61905a49e2a20a9aef02bf11e70931f6ffbcdaa97",
    )
  })

  it("transition key with scope and dispatch id", () => {
    const scope = { threadId: "t", runId: "r", node: "n" }
    expect(transitionKey({ tool: "charge", binding, argsFingerprint: fp, dispatchId: "tc-1", scope })).toBe(
      "22f314e87b790c62fc66bc62f6e0e66d9c02b6b85e4e40101a0c663276a21093",
    )
  })

  it("fingerprint of unicode, nesting and floats", () => {
    const kwargs = { recipient: "acct_é", amount: 100.5, meta: { tags: ["a", "b"], n: null } }
    expect(argsFingerprint(kwargs)).toBe("2fb7f057127bcd54fb9a9c3d048e8f1d3888f28adef2905d972cdc9c1df1bf08")
  })
})

describe("canonicalJson", () => {
  it("escapes like ensure_ascii and sorts keys by code point", () => {
    const v = {
      é: 1,
      a: { z: [1, "\u2028", null, true] },
      "\u{1F600}": "x",
      "\uffff": 2,
      'b"q': "\\\\n\n\t\x01",
    }
    expect(canonicalJson(v)).toBe(
      '{"a":{"z":[1,"\\u2028",null,true]},"b\\"q":"\\\\\\\\n\\n\\t\\u0001","\\u00e9":1,"\\uffff":2,"\\ud83d\\ude00":"x"}',
    )
  })

  // Expected: CPython's json.dumps(json.loads(text), sort_keys=True), as the original keys a model's arguments.
  // A lone surrogate is its own code point, below U+E000; a pair is one astral code point, above U+FFFF.
  const lone: Array<[Record<string, number>, string]> = [
    [{ "\ufeff": 1, "\ud800": 2 }, '{"\\ud800":2,"\\ufeff":1}'],
    [{ "\ue000": 1, "\udfff": 2 }, '{"\\udfff":2,"\\ue000":1}'],
    [{ "\ue000": 1, "\ud83dx": 2 }, '{"\\ud83dx":2,"\\ue000":1}'],
    [
      { "\ud83d\ude00": 1, "\ud83d": 2, "\ud83d\ue000": 3, "\ue000": 4, "\udc00": 5 },
      '{"\\ud83d":2,"\\ud83d\\ue000":3,"\\udc00":5,"\\ue000":4,"\\ud83d\\ude00":1}',
    ],
  ]
  for (const [v, expected] of lone)
    it(`sorts keys with lone surrogates as Python does: ${expected}`, () => {
      expect(canonicalJson(v)).toBe(expected)
    })

  it("escapes DEL and control characters", () => {
    expect(canonicalJson("\x7f\x00\x1f\b\f\r")).toBe('"\\u007f\\u0000\\u001f\\b\\f\\r"')
  })

  const floats: Array<[number, string]> = [
    [0.1, "0.1"],
    [1e-7, "1e-07"],
    [1e22, "1e+22"],
    [123456789.123, "123456789.123"],
    [1e16, "1e+16"],
    [1.5e-5, "1.5e-05"],
    [0.0001, "0.0001"],
    [12345678901234568, "1.2345678901234568e+16"],
    [-2.5, "-2.5"],
    [0.00010001, "0.00010001"],
    [5e-324, "5e-324"],
    [1.7976931348623157e308, "1.7976931348623157e+308"],
    [1e15 + 0.5, "1000000000000000.5"],
  ]
  for (const [x, py] of floats) {
    it(`float ${py}`, () => {
      expect(pythonFloatRepr(x)).toBe(py)
      // A boxed Number is a Python float; a plain integral number below 1e21 is a Python int (python-keys.test.ts).
      expect(canonicalJson(new Number(x))).toBe(py)
      if (!Number.isInteger(x) || Math.abs(x) >= 1e21) expect(canonicalJson(x)).toBe(py)
    })
  }

  it("random floats: shortest digits that read back, in Python's notation for their magnitude", () => {
    let seed = 7
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let i = 0; i < 20000; i++) {
      const x = (rand() - 0.5) * 10 ** Math.floor(rand() * 80 - 40)
      const py = pythonFloatRepr(x)
      expect(Number(py)).toBe(x)
      const abs = Math.abs(x)
      if (abs < 1e-4 || abs >= 1e16) expect(py).toMatch(/^-?\d(\.\d+)?e[+-]\d{2,3}$/)
      else expect(py).toMatch(/^-?\d+\.\d+$/)
    }
  })

  it("safe integers print as Python ints; NaN and infinities as Python does", () => {
    expect(canonicalJson([10, -3, 0, 2 ** 53 - 1])).toBe("[10,-3,0,9007199254740991]")
    expect(canonicalJson([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])).toBe(
      "[NaN,Infinity,-Infinity]",
    )
    expect(pythonFloatRepr(1)).toBe("1.0")
    expect(pythonFloatRepr(-0)).toBe("-0.0")
  })

  it("drops undefined members, stringifies the rest like default=str", () => {
    const d = new Date("2026-01-02T03:04:05.000Z")
    expect(canonicalJson({ a: undefined, b: d, c: 10n, d: [undefined] })).toBe(
      '{"b":"2026-01-02T03:04:05.000Z","c":10,"d":[null]}',
    )
    expect(toJsonValue({ a: undefined, b: d, c: [1, { x: undefined }] })).toEqual({
      b: d.toISOString(),
      c: [1, {}],
    })
  })
})

describe("sha256", () => {
  it("matches Web Crypto for many lengths and non-ASCII input", async () => {
    for (const len of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 4099]) {
      const s = `${"é🙂x".repeat(len)}`.slice(0, len)
      const want = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)))
      expect(sha256Hex(s)).toBe([...want].map((b) => b.toString(16).padStart(2, "0")).join(""))
      // The digest as bytes too (receipts' HMAC hashes a secret over 64 bytes with it), from a string and from bytes.
      expect(sha256(s)).toEqual(want)
      expect(sha256(new TextEncoder().encode(s))).toEqual(want)
    }
  })
})

describe("sha256 digest memo", () => {
  it("remembers recent short inputs, bounded in count and length, and forgets on reconfiguration", () => {
    const seen: string[] = []
    const counting = (input: string | Uint8Array): string => {
      seen.push(typeof input === "string" ? input : "<bytes>")
      return sha256HexJs(input)
    }
    try {
      configureSha256(counting)
      const short = "memo-probe-1"
      expect(sha256Hex(short)).toBe(sha256HexJs(short))
      expect(sha256Hex(short)).toBe(sha256HexJs(short))
      expect(seen.filter((s) => s === short)).toHaveLength(1)

      const long = "L".repeat(3000)
      sha256Hex(long)
      sha256Hex(long)
      expect(seen.filter((s) => s === long)).toHaveLength(2)

      const bytes = new TextEncoder().encode(short)
      expect(sha256Hex(bytes)).toBe(sha256HexJs(short))
      expect(seen.filter((s) => s === "<bytes>")).toHaveLength(1)

      // 16 newer inputs push the probe out of the ring: it is hashed again, and still correctly.
      for (let i = 0; i < 16; i++) sha256Hex(`memo-filler-${i}`)
      expect(sha256Hex(short)).toBe(sha256HexJs(short))
      expect(seen.filter((s) => s === short)).toHaveLength(2)

      // A new implementation must not be answered from the old one's results.
      const other: string[] = []
      configureSha256((input) => {
        other.push(String(input))
        return "0".repeat(64)
      })
      expect(sha256Hex(short)).toBe("0".repeat(64))
      expect(other).toEqual([short])
    } finally {
      configureSha256(null)
    }
    expect(sha256Hex("memo-probe-1")).toBe(sha256HexJs("memo-probe-1"))
  })
})

describe("transition preimage fast path", () => {
  it("equals the generic canonical encoding for every shape", () => {
    const cases = [
      { tool: "charge", binding, argsFingerprint: "ab" },
      {
        tool: "chargé\u{1F600}",
        binding: { ...binding, agentId: 'a"b' },
        argsFingerprint: "ab",
        dispatchId: "tc\n1",
      },
      {
        tool: "t",
        binding,
        argsFingerprint: "x",
        scope: { threadId: "t", runId: "r", node: "n" },
        destination: ["email:b", "email:a"],
      },
    ]
    for (const c of cases) expect(preimageJson(c)).toBe(canonicalJson(buildTransitionPreimage(c)))
  })
})

describe("args fingerprint preimage", () => {
  it("hashes what the generic encoder writes for the arguments without their bookkeeping keys", () => {
    const sha = (s: string) => sha256HexJs(s)
    configureSha256(null)
    const cases: Array<[Record<string, unknown>, string | null]> = [
      [{}, null],
      [{ b: 1, a: "x", tool_call_id: "tc", thread_id: "t" }, null],
      [{ amount: 10, key: "k1", nested: { z: [1, 2.5, null], a: undefined } }, "key"],
      [{ "\u{1F600}": 1, "\uE000": 2, gone: undefined, d: new Date(0) }, null],
      [JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as Record<string, unknown>, null],
    ]
    const bookkeeping = [
      "request_id",
      "tool_call_id",
      "thread_id",
      "run_id",
      "node",
      "state_ref",
      "decision_id",
    ]
    for (const [kwargs, exclude] of cases) {
      // Own members, `__proto__` included (assignment would set the prototype in Node, not in Deno).
      const clean: Record<string, unknown> = {}
      for (const k of Object.keys(kwargs))
        if (!bookkeeping.includes(k) && k !== exclude)
          Object.defineProperty(clean, k, {
            value: kwargs[k],
            enumerable: true,
            writable: true,
            configurable: true,
          })
      expect(argsFingerprint(kwargs, [], exclude)).toBe(sha(canonicalJson({ args: [], kwargs: clean })))
    }
  })
})

describe("an argument named __proto__", () => {
  it("is keyed as the Python original keys it (its args_fingerprint, computed by v1.34.0)", () => {
    const kwargs = JSON.parse('{"__proto__": {"x": 1}, "y": 2, "tool_call_id": "c"}') as Record<
      string,
      unknown
    >
    expect(argsFingerprint(kwargs, [], null)).toBe(
      "4ae0f0aed3de0a168ede0a2ae498d0a6354e2b6dcbc654e6d9aae377f617aad5",
    )
  })

  it("stays an own member of the stored copy and of a replayed clone, never the prototype", () => {
    const kwargs = JSON.parse('{"__proto__": {"tool_call_id": "victim"}, "y": 2}') as Record<string, unknown>
    const stored = toJsonValue(kwargs) as Record<string, unknown>
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype)
    expect(Object.keys(stored)).toEqual(["__proto__", "y"])
    expect(stored.tool_call_id).toBeUndefined()
    const clone = cloneJson(stored as JsonValue) as Record<string, unknown>
    expect(Object.getPrototypeOf(clone)).toBe(Object.prototype)
    expect(JSON.stringify(clone)).toBe('{"__proto__":{"tool_call_id":"victim"},"y":2}')
  })
})
