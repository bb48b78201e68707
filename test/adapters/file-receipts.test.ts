import { execFileSync } from "node:child_process"
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it, vi } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { testReceiptStore } from "../../src/conformance.ts"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  type Receipt,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  receiptJsonLine,
  verifyReceipts,
} from "../../src/core/receipts/index.ts"
import { tempDirs } from "../temp-dirs.ts"

const vectors = JSON.parse(readFileSync(new URL("../fixtures/python-vectors.json", import.meta.url), "utf8"))
const KEY: string = vectors.receipts_hmac.signing_key
const script = new URL("../../scripts/python/verify_receipt.py", import.meta.url).pathname
const freshDir = tempDirs("rcpt-file-")
const tmp = () => {
  const dir = freshDir()
  return join(dir, "receipts.jsonl")
}

const emitterFor = (store: FileReceiptStore) =>
  new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "payment-agent" })

testReceiptStore("file", () => {
  const path = tmp()
  return {
    storage: new FileReceiptStore(path, { fsync: false }),
    peer: new FileReceiptStore(path, { fsync: false }),
  }
})

describe("FileReceiptStore (the original's JSONL)", () => {
  it("appends chained receipts that verify here and, from the main file alone, in Python", async () => {
    const path = tmp()
    const e = emitterFor(new FileReceiptStore(path, { fsync: false }))
    for (let i = 0; i < 3; i++)
      await e.emit({
        action: "send",
        actionKind: "tool",
        requestId: `r${i}`,
        outputs: { i },
        status: "completed",
      })
    const listed = await new FileReceiptStore(path).list()
    expect(listed.map((r) => r.chain?.seq)).toEqual([0, 1, 2])
    expect(await verifyReceipts(listed, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 3,
    })
    const out = execFileSync("python3", [script, path], {
      env: { ...process.env, MYCELIUM_RECEIPT_KEY: KEY },
    })
    expect(out.toString().trim().split("\n")).toHaveLength(3)
  })

  it("reads a file the original wrote (no chain) and appends after it", async () => {
    const path = tmp()
    const records: AuditReceiptRecord[] = vectors.receipts_hmac.receipts.map(
      (r: { record: AuditReceiptRecord }) => r.record,
    )
    writeFileSync(path, `${records.map((r) => receiptJsonLine(r)).join("\n")}\n`)
    const store = new FileReceiptStore(path, { fsync: false })
    await emitterFor(store).emit({
      action: "a",
      actionKind: "task",
      requestId: "t",
      status: "failed",
      error: "E: x",
    })
    const listed = await store.list()
    expect(listed).toHaveLength(4)
    expect(listed.slice(0, 3).every((r) => !r.chain)).toBe(true)
    expect(await verifyReceipts(listed, { hmac: KEY })).toMatchObject({ ok: true, valid: 4 })
  })

  it("concurrent appenders through separate store objects keep one unforked chain", async () => {
    const path = tmp()
    const a = emitterFor(new FileReceiptStore(path, { fsync: false }))
    const b = emitterFor(new FileReceiptStore(path, { fsync: false }))
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).emit({ action: "x", actionKind: "tool", requestId: `r${i}`, status: "completed" }),
      ),
    )
    const listed = await new FileReceiptStore(path).list()
    expect(listed.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i))
    expect(await verifyReceipts(listed, { hmac: KEY }, { requireChain: true })).toMatchObject({ ok: true })
  })

  it("a damaged line is an error, never skipped", async () => {
    const path = tmp()
    writeFileSync(path, '{"receipt_id": "rcpt-1", "agent_id"\n')
    await expect(new FileReceiptStore(path).list()).rejects.toBeInstanceOf(ReceiptStoreCorruptError)
  })

  it("an append after a torn last line (a crash mid-append) starts a line of its own: only the torn one is damaged", async () => {
    const path = tmp()
    const store = new FileReceiptStore(path, { fsync: false })
    const e = emitterFor(store)
    const acked = await e.emit({ action: "a", actionKind: "tool", requestId: "r0", status: "completed" })
    const whole = readFileSync(path, "utf8")
    writeFileSync(path, whole + whole.slice(0, 40))
    const next = await e.emit({ action: "a", actionKind: "tool", requestId: "r1", status: "completed" })
    await expect(store.list()).rejects.toThrow(/line 2 is not JSON/)
    // Truncating the damaged line, as the error says, keeps every acknowledged receipt.
    const [one, , three] = readFileSync(path, "utf8").split("\n")
    writeFileSync(path, `${one}\n${three}\n`)
    const listed = await store.list()
    expect(listed.map((r) => r.receipt_id)).toEqual([acked.receipt_id, next.receipt_id])
    expect(await verifyReceipts(listed, { hmac: KEY }, { requireChain: true })).toMatchObject({ ok: true })
  })
})

// What the original writes: `json.dumps(record.to_dict())` per line, signed over
// `json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)`; Python builds the bytes here.
const PY_SIGN = `
import hashlib, hmac, json, sys
key, path = sys.argv[1], sys.argv[2]
record = {"receipt_id": "rcpt-f10a7f10a7f10a70", "agent_id": "payment-agent", "action": "send_payment",
          "action_kind": "tool", "request_id": "req-floats",
          "inputs": {"args": [2.0], "kwargs": {"amount": 100.0, "fee": 2.5, "big": 2**60, "neg": -0.0, "exp": 1e16}},
          "outputs": {"total": 102.5, "count": 3.0, "ids": [1, 2.0, 9007199254740993]},
          "status": "completed", "timestamp": 1767225600.0, "error": None}
msg = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)
record["signature"] = hmac.new(key.encode(), msg.encode(), hashlib.sha256).hexdigest()
with open(path, "a", encoding="utf-8") as f:
    f.write(json.dumps(record) + "\\n")
`

describe("numbers the original signed as Python writes them", () => {
  it("a receipt with whole-number floats (100.0), -0.0 and ints beyond 2^53 verifies, and appends chain after it", async () => {
    const path = tmp()
    execFileSync("python3", ["-c", PY_SIGN, KEY, path])
    expect(readFileSync(path, "utf8")).toContain('"amount": 100.0')
    const store = new FileReceiptStore(path, { fsync: false })
    const [r] = await store.list()
    expect(await verifyReceipts([r as Receipt], { hmac: KEY })).toMatchObject({ ok: true, valid: 1 })
    // The floats stay floats (boxed) and unbox with +x; the exact int is a bigint; the timestamp is a number.
    const out = r?.outputs as { total: number; count: number; ids: unknown[] }
    expect(out.total).toBe(102.5)
    expect(+out.count).toBe(3)
    expect(out.count).toBeInstanceOf(Number)
    expect(out.ids).toEqual([1, new Number(2), 9007199254740993n])
    expect(typeof r?.timestamp).toBe("number")
    // The same line read with JSON.parse loses 100.0 and reads as tampered: what this parse exists for.
    const naive = JSON.parse(readFileSync(path, "utf8")) as Receipt
    expect(await verifyReceipts([naive], { hmac: KEY })).toMatchObject({ ok: false })

    await emitterFor(store).emit({ action: "next", actionKind: "tool", requestId: "r2", status: "completed" })
    const both = await store.list()
    expect(await verifyReceipts(both, { hmac: KEY })).toMatchObject({ ok: true, valid: 2 })
    execFileSync("python3", [script, path], { env: { ...process.env, MYCELIUM_RECEIPT_KEY: KEY } })
  })

  it("a receipt signed here with integers beyond 2^53 writes them as ints, so Python verifies it", async () => {
    const path = tmp()
    const e = emitterFor(new FileReceiptStore(path, { fsync: false }))
    await e.emit({
      action: "send",
      actionKind: "tool",
      requestId: "big",
      kwargs: { n: 2 ** 60, m: 1e16, x: 0.1, z: -0 },
      outputs: { n: 2 ** 60 },
      status: "completed",
    })
    const line = readFileSync(path, "utf8")
    expect(line).toContain('"n": 1152921504606846976')
    expect(line).toContain('"z": -0.0')
    const out = execFileSync("python3", [script, path], {
      env: { ...process.env, MYCELIUM_RECEIPT_KEY: KEY },
    })
    expect(JSON.parse(out.toString())).toMatchObject({ valid: true })
    const listed = await new FileReceiptStore(path).list()
    expect(await verifyReceipts(listed, { hmac: KEY })).toMatchObject({ ok: true, valid: 1 })
  })
})

describe("paging a large file", () => {
  it("a page parses the chain sidecar once, then only the links appended since; a replaced or cut one afresh", async () => {
    const path = tmp()
    const writer = emitterFor(new FileReceiptStore(path, { fsync: false }))
    const emit = (i: number) =>
      writer.emit({ action: "x", actionKind: "tool", requestId: `r${i}`, status: "completed" })
    for (let i = 0; i < 200; i++) await emit(i)
    // Another store object, as another process: it reads the files, the writer's appends go past it.
    const reader = new FileReceiptStore(path)
    const chainLines = () => readFileSync(reader.chainPath, "utf8").split("\n").slice(0, -1)
    const spy = vi.spyOn(JSON, "parse")
    const linksParsed = async (cursor: number) => {
      spy.mockClear()
      const page = await reader.listPage({ limit: 1, ...(cursor && { cursor: String(cursor) }) })
      const parsed = spy.mock.calls.filter(([text]) => String(text).includes('"mac"')).length
      return [parsed, page.receipts[0]?.chain?.seq ?? null]
    }
    try {
      expect(await linksParsed(0)).toEqual([200, 0])
      expect([await linksParsed(1), await linksParsed(150), await linksParsed(199)]).toEqual([
        [0, 1],
        [0, 150],
        [0, 199],
      ])
      for (let i = 200; i < 203; i++) await emit(i)
      expect(await linksParsed(202)).toEqual([3, 202])
      appendFileSync(reader.chainPath, "{bad\n")
      await expect(reader.listPage({ limit: 1 })).rejects.toThrow(/chain\.jsonl line 204 is not JSON/)
      // Replaced (a new file renamed over it): its own links only.
      writeFileSync(`${path}.new`, `${chainLines().slice(0, 10).join("\n")}\n`)
      renameSync(`${path}.new`, reader.chainPath)
      expect([await linksParsed(9), await linksParsed(150)]).toEqual([
        [10, 9],
        [0, null],
      ])
      // Cut in place, then rewritten longer with other lines before the end the reader parsed to.
      const all = chainLines()
      writeFileSync(reader.chainPath, `${all.slice(0, 5).join("\n")}\n`)
      expect(await linksParsed(7)).toEqual([5, null])
      writeFileSync(reader.chainPath, `${all.slice(3).join("\n")}\n`)
      expect([await linksParsed(0), await linksParsed(8)]).toEqual([
        [7, null],
        [0, 8],
      ])
    } finally {
      spy.mockRestore()
    }
  })

  it("a page's receipts keep only their own lines alive, never the file's text (one copy per page held)", async () => {
    const path = tmp()
    // 100.0 sends each line through the exact reader, whose strings are slices of the text it was given.
    const line = (i: number) =>
      receiptJsonLine({
        receipt_id: `rcpt-${i}`,
        agent_id: "a",
        action: "pay",
        action_kind: "tool",
        request_id: `r${i}`,
        inputs: { args: [], kwargs: { amount: new Number(100) as number } },
        outputs: "y".repeat(2000),
        status: "completed",
        timestamp: 1764957600.1234567 + i,
        signature: "00",
        error: null,
      })
    writeFileSync(path, `${Array.from({ length: 1000 }, (_, i) => line(i)).join("\n")}\n`)
    const store = new FileReceiptStore(path)
    const held: Receipt[] = []
    const before = process.memoryUsage().heapUsed
    let cursor: string | undefined
    do {
      const page = await store.listPage({ limit: 5, ...(cursor && { cursor }) })
      held.push(...page.receipts)
      cursor = page.cursor ?? undefined
    } while (cursor)
    expect(held.map((r) => r.request_id)).toEqual(Array.from({ length: 1000 }, (_, i) => `r${i}`))
    expect(held[0]?.inputs.kwargs.amount).toBeInstanceOf(Number)
    // 200 pages of a 2 MB file: 400 MB when each page's receipts held that page's read of the file.
    expect((process.memoryUsage().heapUsed - before) / 2 ** 20).toBeLessThan(100)
  })
})
