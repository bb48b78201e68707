// The JSONL receipt file and its chain sidecar under a store adversary (or a crash): lines that carry text no signature
// covers, and a link line torn just before its newline.
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import {
  hmacReceiptSigner,
  parseReceiptJson,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  verifyReceipts,
} from "../../src/core/receipts/index.ts"
import { tempDirs } from "../temp-dirs.ts"

const KEY = "tampered-lines-key"
const freshDir = tempDirs("rcpt-tampered-")

async function fileOf(n: number, outputs: unknown = null): Promise<string> {
  const path = join(freshDir(), "receipts.jsonl")
  const e = new ReceiptEmitter({
    signer: hmacReceiptSigner(KEY),
    store: new FileReceiptStore(path, { fsync: false }),
    agentId: "payment-agent",
  })
  for (let i = 0; i < n; i++)
    await e.emit({ action: "refund", actionKind: "tool", requestId: `r${i}`, outputs, status: "completed" })
  return path
}

const edit = (path: string, from: string, to: string) => {
  const text = readFileSync(path, "utf8")
  expect(text).toContain(from)
  writeFileSync(path, text.replace(from, to))
}

describe("a member named twice carries text no signature covers", () => {
  it("an earlier copy of a record's field: refused when read, never verified", async () => {
    const path = await fileOf(2)
    // JSON.parse and json.loads keep the last "status": the signed one. The line says "failed" too.
    edit(path, '{"receipt_id"', '{"status": "failed", "outputs": {"refunded": 500}, "receipt_id"')
    const store = new FileReceiptStore(path)
    await expect(store.list()).rejects.toThrow(ReceiptStoreCorruptError)
    await expect(store.list()).rejects.toThrow(/line 1 names a member twice/)
    // The store's page read refuses it too; the untouched line 2 still reads.
    await expect(store.listPage({ limit: 1 })).rejects.toThrow(ReceiptStoreCorruptError)
    expect((await store.listPage({ limit: 1, cursor: "1" })).receipts).toHaveLength(1)
  })

  it("inside outputs, spelled with an escape, or behind a value nested 20,000 deep", async () => {
    const path = await fileOf(1, { refund: { amount: 100 } })
    const line = readFileSync(path, "utf8").trim()
    expect((await verifyReceipts(await new FileReceiptStore(path).list(), { hmac: KEY })).ok).toBe(true)
    const deep = `${"[".repeat(20_000)}1${"]".repeat(20_000)}`
    for (const forged of [
      line.replace('{"amount": 100}', '{"amount": 100000, "amount": 100}'),
      line.replace('{"amount": 100}', '{"\\u0061mount": 100000, "amount": 100}'),
      line.replace('"status": "completed"', `"status": ${deep}, "status": "completed"`),
    ]) {
      expect(forged).not.toBe(line)
      expect(() => parseReceiptJson(forged)).toThrow(SyntaxError)
      writeFileSync(path, `${forged}\n`)
      await expect(new FileReceiptStore(path).list()).rejects.toThrow(/names a member twice/)
    }
  })

  it("the same name in sibling objects, in a string or as a value is not a duplicate", () => {
    const text =
      '{"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}], "d": "\\"k\\": 1, \\"k\\"", "k": "k", "e": {"k": "a"}}'
    expect(parseReceiptJson(text)).toEqual(JSON.parse(text))
  })

  it("a chain link's member named twice in the sidecar: refused as corrupt", async () => {
    const path = await fileOf(2)
    edit(`${path}.chain.jsonl`, '{"receipt_id"', '{"seq": 7, "receipt_id"')
    await expect(new FileReceiptStore(path).list()).rejects.toThrow(
      /chain\.jsonl line 1 names a member twice/,
    )
  })
})

describe("a sidecar line torn just before its newline", () => {
  it("the next link goes on a line of its own: the store still reads and its chain verifies", async () => {
    const path = await fileOf(1)
    const sidecar = `${path}.chain.jsonl`
    // A crash between the link's text and its newline leaves a line that still parses.
    writeFileSync(sidecar, readFileSync(sidecar, "utf8").replace(/\n$/, ""))
    const e = new ReceiptEmitter({
      signer: hmacReceiptSigner(KEY),
      store: new FileReceiptStore(path, { fsync: false }),
      agentId: "payment-agent",
    })
    await e.emit({ action: "refund", actionKind: "tool", requestId: "r1", status: "completed" })
    await e.emit({ action: "refund", actionKind: "tool", requestId: "r2", status: "completed" })
    expect(readFileSync(sidecar, "utf8").split("\n")).toHaveLength(4)
    const receipts = await new FileReceiptStore(path).list()
    expect(receipts.map((r) => r.chain?.seq)).toEqual([0, 1, 2])
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 3,
    })
  })
})

describe("a record torn by a crash mid-append", () => {
  it("is named a damaged line to truncate, even where the cut falls inside a name that starts as an earlier one", async () => {
    const path = await fileOf(2)
    const [first, second] = readFileSync(path, "utf8").split("\n") as [string, string]
    // "action_kind" follows "action": a cut just after its opening letters leaves a repeated-looking "action".
    for (const cut of ['"action', '"action"']) {
      const torn = second.slice(0, second.indexOf('"action_kind"')) + cut
      writeFileSync(path, `${first}\n${torn}`)
      await expect(new FileReceiptStore(path).list()).rejects.toThrow(
        /line 2 is not JSON: repair or truncate/,
      )
    }
  })
})

describe("a sidecar line that is JSON but no chain link", () => {
  // Taken as the chain's tail, such a line was extended: the next genuine receipt was written with a link sealed on
  // it (no `prev`, a seq of 2.5), which no repair of the damaged line could make verify again.
  it("is refused as corrupt by reads and appends; nothing is appended onto it", async () => {
    for (const [from, to] of [
      [/,"digest":"[0-9a-f]+"/, ""],
      [/"prev":"[0-9a-f]+"/, '"prev":5'],
      [/"seq":1/, '"seq":1.5'],
      [/,"mac":"[0-9a-f]+"/, ""],
    ] as const) {
      const path = await fileOf(2)
      const sidecar = `${path}.chain.jsonl`
      const [one, two] = readFileSync(sidecar, "utf8").split("\n") as [string, string]
      expect(two).toMatch(from)
      writeFileSync(sidecar, `${one}\n${two.replace(from, to)}\n`)
      const before = [readFileSync(path, "utf8"), readFileSync(sidecar, "utf8")]
      const store = new FileReceiptStore(path, { fsync: false })
      await expect(store.list(), to).rejects.toThrow(/chain\.jsonl line 2 is not a receipt/)
      const e = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "payment-agent" })
      await expect(
        e.emit({ action: "refund", actionKind: "tool", requestId: "r2", status: "completed" }),
        to,
      ).rejects.toThrow(ReceiptStoreCorruptError)
      expect([readFileSync(path, "utf8"), readFileSync(sidecar, "utf8")], to).toEqual(before)
    }
  })
})
