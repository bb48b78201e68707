// The LedgerStorage conformance suite over the file store: Node, Deno and Bun each run it on their own node:fs.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { testLedgerStorage } from "../../src/conformance.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-file-conf-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshPath = () => join(root, `l${n++}`, "ledger.json")

testLedgerStorage("file", () => {
  const path = freshPath()
  const storage = new FileLedgerStorage(path)
  // A second instance has its own cache: every read across the two goes through the file.
  const peer = new FileLedgerStorage(path)
  // As another process (or the Python original) adds a row: rewrite the file and swap it in.
  const writeRaw = async (id: string, json: string) => {
    const rows = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {}
    rows[id] = JSON.parse(json)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(`${path}.raw`, JSON.stringify(rows, null, 2))
    renameSync(`${path}.raw`, path)
  }
  return {
    storage,
    peer,
    writeRaw,
    cleanup: async () => Promise.all([storage.close(), peer.close()]).then(() => {}),
  }
})
