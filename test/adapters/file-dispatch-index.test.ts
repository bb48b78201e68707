// findByDispatchId answers the rows that carry a dispatch id now. A row rewritten with another tool_call_id stayed
// under its old id in the instance that wrote it, while a fresh instance (which indexes the file) answered without
// it: two workers on one ledger disagreed on whether that dispatch had a row.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-dispatch-index-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("file store: the dispatch id index", () => {
  it("moves a row rewritten with another dispatch id: this instance and a fresh one agree", async () => {
    const path = join(root, "ledger.json")
    const s = new FileLedgerStorage(path, { fsync: false })
    const row = (requestId: string, callId: string, at: number) =>
      newEntry({ requestId, tool: "t", kwargs: { tool_call_id: callId } }, at)
    await s.set(row("r1", "call-X", 1))
    await s.set(row("r2", "call-X", 1))
    await s.set(row("r1", "call-Y", 2))
    const ids = async (store: FileLedgerStorage, d: string) =>
      (await store.findByDispatchId(d)).map((e) => e.requestId).sort()
    const fresh = new FileLedgerStorage(path)
    for (const store of [s, fresh]) {
      expect(await ids(store, "call-X")).toEqual(["r2"])
      expect(await ids(store, "call-Y")).toEqual(["r1"])
    }
  })
})
