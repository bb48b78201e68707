import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  receiptJsonLine,
  verifyReceipts,
} from "../../src/core/receipts/index.ts"
import { testReceiptStore } from "../conformance/receipt-store.ts"

const vectors = JSON.parse(readFileSync(new URL("../fixtures/python-vectors.json", import.meta.url), "utf8"))
const KEY: string = vectors.receipts_hmac.signing_key
const script = new URL("../../scripts/python/verify_receipt.py", import.meta.url).pathname
const tmp = () => join(mkdtempSync(join(tmpdir(), "rcpt-file-")), "receipts.jsonl")

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
})
