// A second process for file-lock-handover.test.ts: finds the parent's lock stale (its record backdated, as if the
// parent were paused past staleLockAfter), takes it over and claims one id. argv: ledgerPath requestId
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"

const [path, id] = process.argv.slice(2) as [string, string]
const now = Date.now() / 1000
const r = await new FileLedgerStorage(path, { lockTimeout: 5, fsync: false }).tryClaimInflight(
  newEntry({ requestId: id, tool: "t" }, now),
  60,
  now,
)
process.stdout.write(r.outcome)
