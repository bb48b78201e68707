// A writer for file-stall.test.ts: two stores on one file (each re-reads the other's rewrite) claiming new ids
// until killed, printing each id it claimed.
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

const [path, tag] = process.argv.slice(2) as [string, string]
const stores = [0, 1].map(
  () => new FileLedgerStorage(path, { staleLockAfter: 1, lockTimeout: 20, fsync: false }),
)
for (let i = 0; ; i++) {
  const id = `${tag}-${String(i).padStart(6, "0")}`
  const now = Date.now() / 1000
  try {
    const r = await stores[i % 2]?.tryClaimInflight(newEntry({ requestId: id, tool: "t" }, now), 60, now)
    if (r?.outcome === "claimed") process.stdout.write(`${id}\n`)
  } catch {
    // its lock was taken over while it was stopped: this write was refused, the next one retries
  }
}
