// Guards FileReceiptStore reads against another process's append in flight. An append writes the receipt's line,
// fsyncs it, then writes its link to `<path>.chain.jsonl`, all under the store's lock; reads take no lock. A read
// between the two writes handed out the newest receipt without its link: `receipts verify` (requireChain) reported a
// healthy live store as stripped, and an export taken then kept the receipt linkless for good. A read that shows a
// receipt without its link now looks it up again once no append that may have written it is under way.
import { spawn } from "node:child_process"
import { appendFileSync, existsSync, readFileSync, utimesSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import { LockedFile } from "../../src/adapters/file-locked.ts"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import {
  hmacReceiptSigner,
  type Receipt,
  ReceiptEmitter,
  ReceiptStoreCorruptError,
  receiptJsonLine,
  verifyReceipts,
} from "../../src/core/receipts/index.ts"
import { childBundles } from "../child-bundle.ts"
import { tempDirs } from "../temp-dirs.ts"

const bundled = childBundles()
const freshDir = tempDirs("rcpt-live-read-")
const receiptsPath = () => join(freshDir(), "receipts.jsonl")
const pay = (i: number) =>
  ({ action: "pay", actionKind: "tool", requestId: `r${i}`, status: "completed" }) as const

/** Runs a child script under node; `paused` settles once it prints that word, `done` when it exits 0. */
function child(script: string, args: string[]) {
  const p = spawn(process.execPath, [bundled(resolve(script)), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  })
  let out = ""
  let err = ""
  let finished = false
  const paused = new Promise<void>((ok, fail) => {
    p.stdout.on("data", (d) => {
      out += String(d)
      if (out.includes("paused")) ok()
    })
    p.on("exit", () => fail(new Error(`the writer exited before it paused: ${err}`)))
  })
  const done = new Promise<void>((ok, fail) => {
    p.stderr.on("data", (d) => {
      err += String(d)
    })
    p.on("error", fail)
    p.on("exit", (code) => {
      finished = true
      code === 0 ? ok() : fail(new Error(`the writer exited ${code}: ${err}`))
    })
  })
  paused.catch(() => {})
  return { paused, done, finished: () => finished }
}

const seqs = (receipts: Receipt[]) => receipts.map((r) => r.chain?.seq ?? null)

afterEach(() => {
  vi.restoreAllMocks()
})

/**
 * Reads list() and listPage() while a child writer holds the store's lock inside its third append (`torn`: half of
 * that receipt's line written; otherwise its line written and its link not); `check` looks at the files first.
 */
async function readWhilePaused(mode: "link" | "torn", check: (path: string) => void) {
  const path = receiptsPath()
  const go = `${path}.go`
  const w = child("test/adapters/file-receipts-paused-append-child.ts", [path, "3", go, mode])
  await w.paused
  const reader = new FileReceiptStore(path)
  let reads: [Promise<Receipt[]>, Promise<{ receipts: Receipt[] }>]
  try {
    check(path)
    reads = [reader.list(), reader.listPage({ limit: 10 })]
  } finally {
    writeFileSync(go, "")
  }
  const [all, page] = await Promise.all([...reads, w.done])
  return { all, page: page.receipts }
}

describe("FileReceiptStore read while another process appends", () => {
  it("a read between a receipt's line and its link's waits for the link, list() and listPage() alike", async () => {
    const { all, page } = await readWhilePaused("link", (path) => {
      // The writer holds its lock with receipt #2 written and its link not.
      const lineCount = (p: string) => readFileSync(p, "utf8").split("\n").length - 1
      expect([lineCount(path), lineCount(`${path}.chain.jsonl`)]).toEqual([3, 2])
    })
    expect([seqs(all), seqs(page)]).toEqual([
      [0, 1, 2],
      [0, 1, 2],
    ])
    expect(await verifyReceipts(all, { hmac: "live-read-key" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 3,
    })
  }, 30_000)

  it("a read that meets a receipt's line half written by another process waits for it, not calls it damaged", async () => {
    const { all, page } = await readWhilePaused("torn", (path) => {
      // The writer holds its lock with half of receipt #2's line written.
      expect(readFileSync(path, "utf8").endsWith("\n")).toBe(false)
    })
    expect([seqs(all), seqs(page)]).toEqual([
      [0, 1, 2],
      [0, 1, 2],
    ])
  }, 30_000)

  it("a line damaged with no append under way is still named as damaged", async () => {
    const path = receiptsPath()
    const e = new ReceiptEmitter({
      signer: hmacReceiptSigner("live-read-key"),
      store: new FileReceiptStore(path),
      agentId: "payer",
    })
    await e.emit(pay(0))
    appendFileSync(path, '{"receipt_id": "half')
    await expect(new FileReceiptStore(path).list()).rejects.toBeInstanceOf(ReceiptStoreCorruptError)
  })

  it("reads racing another process's 60 appends never hand out a receipt without its link", async () => {
    const path = receiptsPath()
    // Appends in bursts of 5 with a pause between, signed with this key, as agent shared-agent.
    const w = child("test/core/receipts/children/append-receipts.ts", [path, "w", "60", "0"])
    const reader = new FileReceiptStore(path)
    const linkless = new Set<string>()
    let reads = 0
    while (!w.finished()) {
      // The reads are synchronous inside: yield so the child's exit is seen.
      await new Promise((r) => setImmediate(r))
      if (!existsSync(path)) continue
      // A line still being written is waited for, never named as damaged: any error fails the test.
      const listed = await reader.list()
      const paged = (await reader.listPage({ limit: 100 })).receipts
      for (const r of [...listed, ...paged]) if (!r.chain) linkless.add(r.receipt_id)
      reads++
    }
    await w.done
    const all = await reader.list()
    expect({ receipts: all.length, linkless: linkless.size, read: reads > 0 }).toEqual({
      receipts: 60,
      linkless: 0,
      read: true,
    })
    expect(
      await verifyReceipts(all, { hmac: "adversarial-stores-key" }, { requireChain: true }),
    ).toMatchObject({
      ok: true,
    })
  }, 30_000)

  it("a writer that died between the two left its lock: the read takes it over and hands the receipt out unchained", async () => {
    const path = receiptsPath()
    const signer = hmacReceiptSigner("live-read-key")
    const e = new ReceiptEmitter({ signer, store: new FileReceiptStore(path), agentId: "payer" })
    for (let i = 0; i < 2; i++) await e.emit(pay(i))
    appendFileSync(path, `${receiptJsonLine(await e.sign(pay(2)))}\n`)
    // A lock record no live holder wrote, an hour old: stale by its age.
    writeFileSync(`${path}.lock.ts`, "{}")
    utimesSync(`${path}.lock.ts`, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000))
    const all = await new FileReceiptStore(path).list()
    expect(seqs(all)).toEqual([0, 1, null])
    expect(existsSync(`${path}.lock.ts`)).toBe(false)
    const report = await verifyReceipts(all, { hmac: "live-read-key" }, { requireChain: true })
    expect(report.failures.map((f) => [f.index, f.reason])).toEqual([[2, "unchained"]])
  })

  it("receipts without links are read without the lock when it is free, and without it when it cannot be taken", async () => {
    const path = receiptsPath()
    const signer = hmacReceiptSigner("live-read-key")
    // The original's file: every receipt unchained, no sidecar.
    const e = new ReceiptEmitter({
      signer,
      store: new FileReceiptStore(path),
      agentId: "payer",
      chain: false,
    })
    for (let i = 0; i < 3; i++) await e.emit(pay(i))
    const run = vi.spyOn(LockedFile.prototype, "run")
    expect(seqs(await new FileReceiptStore(path).list())).toEqual([null, null, null])
    expect(run).not.toHaveBeenCalled()
    // Held by another process, in a directory this reader may not write to (its lock file could not be made).
    writeFileSync(`${path}.lock.ts`, "{}")
    run.mockRejectedValue(Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" }))
    expect((await new FileReceiptStore(path).listPage({ limit: 10 })).receipts).toHaveLength(3)
    expect(run).toHaveBeenCalledTimes(1)
  })
})
