// One writer of the recovery race: `count` rows of its own, one write each. A lost update (two processes inside
// the lock at once, each rewriting the file from its own copy) drops rows. argv: ledgerPath name count goFile
import { existsSync } from "node:fs"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

const [path, name, count, go] = process.argv.slice(2) as [string, string, string, string]
const storage = new FileLedgerStorage(path, { lockTimeout: 90, fsync: false })
process.stderr.write("ready\n")
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 1))
for (let i = 0; i < Number(count); i++) {
  await storage.set(newEntry({ requestId: `${name}-${i}`, tool: "t" }, 1))
  // A gap between writes, so the lock is free now and then and the parent can plant a dead holder's lock.
  await new Promise((r) => setTimeout(r, Math.random() * 6))
}
