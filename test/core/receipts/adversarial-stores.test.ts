// Adversarial review of receipt stores: several processes appending to one file, and a file an attacker edited.
import { spawn } from "node:child_process"
import { appendFileSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { FileReceiptStore } from "../../../src/adapters/file-receipts.ts"
import { ReceiptStoreCorruptError, verifyReceipts } from "../../../src/core/receipts/index.ts"
import { childBundles } from "../../child-bundle.ts"
import { tempDirs } from "../../temp-dirs.ts"

const bundled = childBundles()

const KEY = "adversarial-stores-key"
const child = resolve("test/core/receipts/children/append-receipts.ts")
const freshDir = tempDirs("rcpt-adv-store-")
const tmpFile = () => {
  const dir = freshDir()
  return join(dir, "receipts.jsonl")
}

function run(path: string, writer: string, count: number, startAt = 0): Promise<void> {
  return new Promise((ok, fail) => {
    const args = [bundled(child), path, writer, String(count), String(startAt)]
    const p = spawn(process.execPath, args, { stdio: "pipe" })
    let err = ""
    p.stderr.on("data", (d) => {
      err += String(d)
    })
    p.on("error", fail)
    p.on("exit", (code) => (code === 0 ? ok() : fail(new Error(`writer ${writer} exited ${code}: ${err}`))))
  })
}

describe("file store under concurrent processes", () => {
  it("three processes appending to one chain at once leave one unforked chain", async () => {
    const path = tmpFile()
    // All start appending at one instant, after their (slow) start-up, so the appends really interleave.
    const startAt = Date.now() + 4000
    await Promise.all(["a", "b", "c"].map((w) => run(path, w, 15, startAt)))
    const receipts = await new FileReceiptStore(path).list()
    expect(receipts).toHaveLength(45)
    expect(receipts.map((r) => r.chain?.seq)).toEqual([...Array(45).keys()])
    expect(new Set(receipts.map((r) => r.request_id)).size).toBe(45)
    const writers = receipts.map((r) => r.request_id.split("-")[0])
    const switches = writers.filter((w, i) => i > 0 && w !== writers[i - 1]).length
    expect(switches).toBeGreaterThan(2)
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toEqual({
      ok: true,
      valid: 45,
      failures: [],
    })
  }, 60_000)
})

describe("a file edited by someone who can write it", () => {
  it("a line swapped between the record file and the sidecar, or a link pointed at another record, is caught", async () => {
    const path = tmpFile()
    await run(path, "a", 3)
    const store = new FileReceiptStore(path)
    const links = readFileSync(`${path}.chain.jsonl`, "utf8").trim().split("\n")
    // Swap the receipt_ids of two links: each record now carries the other's link.
    const l0 = JSON.parse(links[0] as string)
    const l1 = JSON.parse(links[1] as string)
    ;[l0.receipt_id, l1.receipt_id] = [l1.receipt_id, l0.receipt_id]
    writeFileSync(`${path}.chain.jsonl`, `${[JSON.stringify(l0), JSON.stringify(l1), links[2]].join("\n")}\n`)
    const v = await verifyReceipts(await store.list(), { hmac: KEY }, { requireChain: true })
    // Each link still holds its place: #1 (on record 0) then #0 (on record 1) is out of order.
    expect(v.failures.map((f) => `${f.index}:${f.reason}`)).toEqual(["0:bad_link", "1:bad_link", "1:reorder"])
  }, 30_000)

  it("a deleted sidecar leaves records that fail requireChain; a valid-JSON non-receipt line is an error", async () => {
    const path = tmpFile()
    await run(path, "a", 2)
    writeFileSync(`${path}.chain.jsonl`, "")
    const store = new FileReceiptStore(path)
    const v = await verifyReceipts(await store.list(), { hmac: KEY }, { requireChain: true })
    expect(v.failures.map((f) => f.reason)).toEqual(["unchained", "unchained"])
    appendFileSync(path, '{"receipt_id": "rcpt-x", "note": "not a receipt"}\n')
    await expect(store.list()).rejects.toBeInstanceOf(ReceiptStoreCorruptError)
  }, 30_000)
})
