// The LedgerStorage conformance suite over the file store: Node, Deno and Bun each run it on their own node:fs.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { testLedgerStorage } from "../conformance/ledger-storage.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-file-conf-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0

testLedgerStorage("file", () => {
  const path = join(root, `l${n++}`, "ledger.json")
  const storage = new FileLedgerStorage(path)
  // A second instance has its own cache: every read across the two goes through the file.
  const peer = new FileLedgerStorage(path)
  return { storage, peer, cleanup: async () => Promise.all([storage.close(), peer.close()]).then(() => {}) }
})
