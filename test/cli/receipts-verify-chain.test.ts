// `mycelium receipts verify` requires every receipt's chain link unless told --allow-unchained: an exported file with
// a receipt deleted and the links after it stripped must not verify, while the original's unchained files still can.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { run as receiptsCommand } from "../../src/cli/commands/receipts.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  receiptExportLine,
  recordOf,
} from "../../src/core/receipts/index.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-verify-chain-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
const env = { MYCELIUM_SIGNING_KEY: "audit-key" }

describe("mycelium receipts verify and the chain", () => {
  it("requires the chain by default; --allow-unchained accepts the original's unchained receipts", async () => {
    const store = new MemoryReceiptStore()
    const e = new ReceiptEmitter({ signer: hmacReceiptSigner("audit-key"), store, agentId: "payer" })
    for (let i = 0; i < 5; i++)
      await e.emit({ action: "charge", actionKind: "tool", requestId: `req-${i}`, status: "completed" })
    const all = await store.list()
    const at = (i: number) => all[i] as Receipt
    const write = (name: string, rs: readonly Receipt[]) =>
      writeFileSync(join(cwd, name), rs.map((r) => `${receiptExportLine(r)}\n`).join(""))
    write("audit.jsonl", all)
    write("cut.jsonl", [at(0), at(1), recordOf(at(3)), recordOf(at(4))])
    write(
      "plain.jsonl",
      all.map((r) => recordOf(r)),
    )

    expect(run(["receipts", "verify", "audit.jsonl"], env).code).toBe(0)
    const cut = run(["receipts", "verify", "cut.jsonl"], env)
    expect([cut.code, cut.out.match(/FAIL.*unchained/g)?.length]).toEqual([1, 2])
    // Allowing unchained receipts anywhere (another writer appends them) is what a stripped link hides behind.
    expect(run(["receipts", "verify", "cut.jsonl", "--allow-unchained"], env).code).toBe(0)
    expect(run(["receipts", "verify", "plain.jsonl"], env).code).toBe(1)
    expect(run(["receipts", "verify", "plain.jsonl", "--allow-unchained"], env).code).toBe(0)
    expect(run(["receipts", "verify", "audit.jsonl", "--require-chain"], env).code).toBe(0)
    expect(run(["receipts", "verify", "audit.jsonl", "--require-chain", "--allow-unchained"], env).code).toBe(
      2,
    )
  }, 60_000)

  // The store writes a receipt before its link: a link in the sidecar whose receipt the file lacks was left by an
  // edit. Cut from the end with its link left there, the last receipt went unseen ("2 receipts verified", exit 0).
  it("a receipt cut from the end of the file while the sidecar keeps its link is truncated", async () => {
    const file = join(cwd, "sidecar.jsonl")
    const e = new ReceiptEmitter({
      signer: hmacReceiptSigner("audit-key"),
      store: new FileReceiptStore(file),
      agentId: "payer",
    })
    for (let i = 0; i < 3; i++)
      await e.emit({ action: "charge", actionKind: "tool", requestId: `req-${i}`, status: "completed" })
    expect(run(["receipts", "verify", file], env)).toMatchObject({ code: 0 })
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean)
    writeFileSync(file, `${lines.slice(0, 2).join("\n")}\n`)
    const cut = run(["receipts", "verify", file, "--json"], env)
    expect(cut.code, cut.err).toBe(1)
    expect(JSON.parse(cut.out)).toMatchObject({
      receipts: 2,
      ok: false,
      failures: [{ index: 1, reason: "truncated" }],
    })
    writeFileSync(file, "")
    const emptied = run(["receipts", "verify", file, "--json"], env)
    expect(emptied.code, emptied.err).toBe(1)
    expect(JSON.parse(emptied.out)).toMatchObject({ receipts: 0, failures: [{ reason: "truncated" }] })
  }, 60_000)

  // Verify reads the file, then the sidecar, without the writers' lock: a receipt a live worker appended in between
  // left its link as a head past the file's end, so every verify of a store in use failed `truncated` (6 of 6 runs
  // beside a writer). Read first, every link in the sidecar has its receipt in the file read after it.
  it("a receipt appended while verify reads a live store is no truncation", async () => {
    const file = join(cwd, "live.jsonl")
    const e = new ReceiptEmitter({
      signer: hmacReceiptSigner("audit-key"),
      store: new FileReceiptStore(file),
      agentId: "payer",
    })
    const emit = (i: number) =>
      e.emit({ action: "charge", actionKind: "tool", requestId: `live-${i}`, status: "completed" })
    for (let i = 0; i < 3; i++) await emit(i)
    const list = FileReceiptStore.prototype.list
    // A worker appends right after verify's read of the file.
    const spy = vi.spyOn(FileReceiptStore.prototype, "list").mockImplementationOnce(async function (
      this: FileReceiptStore,
      ...args
    ) {
      const read = await list.apply(this, args)
      await emit(3)
      return read
    })
    const out = vi.spyOn(console, "log").mockImplementation(() => {})
    vi.stubEnv("MYCELIUM_SIGNING_KEY", "audit-key")
    try {
      const code = await receiptsCommand(["verify", file, "--json"])
      expect([code, JSON.parse(String(out.mock.calls[0]?.[0]))]).toMatchObject([
        0,
        { receipts: 3, ok: true, failures: [] },
      ])
      expect(spy).toHaveBeenCalledTimes(1)
    } finally {
      vi.restoreAllMocks()
      vi.unstubAllEnvs()
    }
    expect(run(["receipts", "verify", file], env)).toMatchObject({ code: 0 })
  }, 60_000)
})
