// Guards what FileReceiptStore refuses to treat as its own.
// - A file whose links are inline in its record lines (what `receipts export` and receiptExportLine write): list()
//   reads those links, but an append takes the chain's tail from the `.chain.jsonl` sidecar, so appending to such a
//   file (a store restored from an export) sealed the next receipt as #0 under the #2 the file shows: a fork of the
//   store's own making that every later verify reported. Starting a chain there is refused instead.
// - Bytes that are not UTF-8: every writer writes ASCII, the original's reader and the HTTP one refuse them, but the
//   store read them as U+FFFD, so an edited file read, and verified, as if the edit were not there.
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  receiptExportLine,
  verifyReceipts,
} from "../../src/core/receipts/index.ts"
import { tempDirs } from "../temp-dirs.ts"

const freshDir = tempDirs("rcpt-refused-")
const signer = hmacReceiptSigner("refused-key")
const pay = (i: number, outputs?: unknown) =>
  ({ action: "pay", actionKind: "tool", requestId: `r${i}`, status: "completed", outputs }) as const

describe("FileReceiptStore and a file whose links are inline (an export)", () => {
  it("refuses to start a chain there, appends nothing, and the file still lists and verifies", async () => {
    const mem = new MemoryReceiptStore()
    const exporter = new ReceiptEmitter({ signer, store: mem, agentId: "payer" })
    for (let i = 0; i < 3; i++) await exporter.emit(pay(i))
    const path = join(freshDir(), "receipts.jsonl")
    const exported = (await mem.list()).map((r) => `${receiptExportLine(r)}\n`).join("")
    writeFileSync(path, exported)

    const store = new FileReceiptStore(path)
    for (const agentId of ["payer", "other-agent"]) {
      const e = new ReceiptEmitter({ signer, store, agentId })
      const refused = await e.emit(pay(3)).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(ReceiptStoreCorruptError)
      expect(refused).toMatchObject({ code: "receipt_store_corrupt", message: /receipt export, not a store/ })
    }
    expect(readFileSync(path, "utf8")).toBe(exported)
    expect(existsSync(store.chainPath)).toBe(false)
    const listed = await store.list()
    expect(listed.map((r) => r.chain?.seq)).toEqual([0, 1, 2])
    expect(await verifyReceipts(listed, { hmac: "refused-key" }, { requireChain: true })).toMatchObject({
      ok: true,
    })
  })

  it("a record holding a member named chain below its top level is no inline link: the chain starts", async () => {
    const path = join(freshDir(), "receipts.jsonl")
    const e = new ReceiptEmitter({
      signer,
      store: new FileReceiptStore(path),
      agentId: "payer",
      chain: false,
    })
    await e.emit(pay(0, { chain: { seq: 9 } }))
    const chained = new ReceiptEmitter({ signer, store: new FileReceiptStore(path), agentId: "payer" })
    expect((await chained.emit(pay(1))).chain?.seq).toBe(0)
  })
})

describe("FileReceiptStore and bytes that are not UTF-8", () => {
  /** Two chained receipts, the first with `\ufffd` in its outputs replaced by the raw byte 0xFF. */
  async function edited() {
    const path = join(freshDir(), "receipts.jsonl")
    const e = new ReceiptEmitter({ signer, store: new FileReceiptStore(path), agentId: "payer" })
    await e.emit(pay(0, { note: "\ufffd" }))
    await e.emit(pay(1))
    const bytes = readFileSync(path)
    const at = bytes.indexOf("\\ufffd")
    writeFileSync(path, Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff]), bytes.subarray(at + 6)]))
    return path
  }

  it("a record line holding one is refused as corrupt, naming the line, by list() and a page holding it", async () => {
    const path = await edited()
    const store = new FileReceiptStore(path)
    const refusal = {
      code: "receipt_store_corrupt",
      message: `${path} line 1 is not UTF-8: repair it, then retry`,
    }
    await expect(store.list()).rejects.toMatchObject(refusal)
    await expect(store.listPage({ limit: 1 })).rejects.toMatchObject(refusal)
    // A page after it still reads, as after a damaged line of any kind.
    expect((await store.listPage({ limit: 1, cursor: "1" })).receipts.map((r) => r.request_id)).toEqual([
      "r1",
    ])
  })

  it("a sidecar line holding one is refused as corrupt, naming the line", async () => {
    const path = join(freshDir(), "receipts.jsonl")
    const e = new ReceiptEmitter({ signer, store: new FileReceiptStore(path), agentId: "payer" })
    await e.emit(pay(0))
    await e.emit(pay(1))
    const sidecar = `${path}.chain.jsonl`
    const bytes = readFileSync(sidecar)
    const at = bytes.lastIndexOf('"payer"')
    writeFileSync(
      sidecar,
      Buffer.concat([bytes.subarray(0, at + 1), Buffer.from([0xc3]), bytes.subarray(at + 2)]),
    )
    await expect(new FileReceiptStore(path).list()).rejects.toMatchObject({
      code: "receipt_store_corrupt",
      message: `${sidecar} line 2 is not UTF-8: repair it, then retry`,
    })
  })
})
