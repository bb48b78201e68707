// Run under Deno and Bun by file-lock-kill.test.ts: a lock, a gc marker and a temp record left by dead writers
// on this host (pid beyond Linux's pid_max, so never alive) are recovered at once. Prints one JSON line.
import { mkdirSync, readdirSync, readlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { dirname } from "node:path"
import process from "node:process"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

const path = process.argv[2] as string
mkdirSync(dirname(path), { recursive: true })
// Same PID namespace as this process: only there is a gone pid proof of a dead holder.
const pidns = (() => {
  try {
    return readlinkSync("/proc/self/ns/pid")
  } catch {
    return null
  }
})()
const dead = (token: string) =>
  JSON.stringify({ pid: 99_999_999, host: hostname(), pidns, token, at: Date.now() })
writeFileSync(`${path}.lock.ts`, dead("deadholder"))
writeFileSync(`${path}.lock.ts.gc-deadholder`, dead("deadrecoverer"))
writeFileSync(`${path}.lock.ts.tmp-99999999-x`, dead("99999999-x"))
const storage = new FileLedgerStorage(path, { lockTimeout: 3, staleLockAfter: 30 })
const t0 = performance.now()
await storage.set(newEntry({ requestId: "r", tool: "t" }, 1))
const ms = performance.now() - t0
console.log(
  JSON.stringify({
    ms: Math.round(ms),
    row: (await storage.get("r"))?.requestId ?? null,
    files: readdirSync(dirname(path)).sort(),
  }),
)
