// A receipt survives its store's text in every runtime: signed here, written as the original's JSONL line, read
// back, it verifies; and text in Python's number forms (floats such as 100.0, -0.0, ints beyond 2^53) reads back
// to values that write the same text again, which is what a signature over the original's records needs.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseReceiptJson, receiptJsonLine } from "../../../src/adapter-kit.ts"
import { canonicalJson } from "../../../src/core/ledger/model/canonical.ts"
import { pythonDumps } from "../../../src/core/python-json.ts"
import { receiptPayloadText } from "../../../src/core/receipts/record.ts"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  verifyReceipt,
} from "../../../src/receipts.ts"

const KEY = "round-trip-key"

// Numbers in every form Python tells apart: ints (also beyond 2^53, as bigint), floats, whole floats, -0.0.
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1e6, max: 1e6 }).map((n) => new Number(n)), // a float Python wrote as 3.0
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 70n }),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 69n }).map(Number), // a JS number beyond 2^53: Python's int
  fc.constant(-0),
)
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    number,
    fc.string({ unit: "binary" }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ unit: "binary", maxLength: 6 }), tie("value"), { maxKeys: 4 }),
  ),
})).value

describe("receipt text round trip", () => {
  it("Python-form text reads back to values that write the same canonical text", () => {
    fc.assert(
      fc.property(json, (v) => {
        const text = pythonDumps(v)
        expect(canonicalJson(parseReceiptJson(text))).toBe(canonicalJson(v))
        expect(pythonDumps(parseReceiptJson(text))).toBe(text)
      }),
      { numRuns: 300 },
    )
  })

  it("a receipt signed here, written as a JSONL line and read back, verifies", async () => {
    const emitter = new ReceiptEmitter({
      signer: hmacReceiptSigner(KEY),
      store: new MemoryReceiptStore(),
      agentId: "agent",
    })
    await fc.assert(
      fc.asyncProperty(json, json, async (kwargs, outputs) => {
        const record = await emitter.sign({
          action: "tool",
          actionKind: "tool",
          requestId: "r",
          kwargs: { k: kwargs },
          outputs,
          status: "completed",
        })
        const back = parseReceiptJson(receiptJsonLine(record)) as AuditReceiptRecord
        expect(await verifyReceipt(back, { hmac: KEY })).toBe(true)
        expect(await verifyReceipt({ ...back, request_id: "x" }, { hmac: KEY })).toBe(false)
      }),
      { numRuns: 200 },
    )
  })

  it("a whole float stays one and -0.0 stays a plain -0", () => {
    const v = parseReceiptJson(
      '{"a": 100.0, "b": -0.0, "c": 1e3, "d": 2.5, "e": 9007199254740993, "timestamp": 5.0}',
    )
    expect(v).toEqual({
      a: new Number(100),
      b: -0,
      c: new Number(1000),
      d: 2.5,
      e: 9007199254740993n,
      timestamp: 5,
    })
    expect(Object.is((v as { b: number }).b, -0)).toBe(true)
  })

  it("Python's bare NaN and Infinity read as json.loads reads them and write back the same", () => {
    const text = '{"a": NaN, "b": [Infinity, -Infinity], "c": 1.0}'
    const v = parseReceiptJson(text) as { a: number; b: number[] }
    expect(Number.isNaN(v.a)).toBe(true)
    expect(v.b).toEqual([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])
    expect(pythonDumps(v)).toBe(text)
    expect(canonicalJson(v)).toBe('{"a":NaN,"b":[Infinity,-Infinity],"c":1.0}')
    expect(() => parseReceiptJson('{"a": Nan}')).toThrow(SyntaxError)
  })

  it("valid JSON too deep for the exact parser still reads (as JSON.parse reads it), never throws", () => {
    const deep = `${"[".repeat(20_000)}1.0${"]".repeat(20_000)}`
    let v = parseReceiptJson(deep)
    for (let i = 0; i < 20_000; i++) v = (v as unknown[])[0]
    // V8 runtimes overflow the recursive parser at this depth and fall back (a plain 1); Bun's deeper stack parses it
    // exactly (a boxed 1.0). Either way it reads.
    expect(+(v as number)).toBe(1)
    expect(() => parseReceiptJson('{"a": 1.0')).toThrow(SyntaxError)
  })

  it("a record read with whole floats keeps them through the memory store's copies", async () => {
    const line =
      '{"receipt_id": "rcpt-0123456789abcdef", "agent_id": "a", "action": "pay", "action_kind": "tool", ' +
      '"request_id": "r", "inputs": {"args": [], "kwargs": {"amount": 100.0}}, "outputs": {"paid": 100.0}, ' +
      '"status": "completed", "timestamp": 1767225600.0, "signature": "", "error": null}'
    const read = parseReceiptJson(line) as AuditReceiptRecord
    // Signed over the text the original signs for this record, as its emitter would.
    const text = receiptPayloadText(read)
    expect(text).toContain('"outputs":{"paid":100.0}')
    const record = { ...read, signature: await hmacReceiptSigner(KEY).sign(text) }
    const store = new MemoryReceiptStore()
    await store.append(record)
    const [listed] = await store.list()
    expect(await verifyReceipt(listed as AuditReceiptRecord, { hmac: KEY })).toBe(true)
  })
})
