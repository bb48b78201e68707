// Run by file-runtimes.test.ts under Deno without --allow-all: one ledgered call on a file store whose lock file
// the test wrote beforehand. Prints one JSON line: what the call answered, and after how long.
import process from "node:process"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { ActionLedger } from "../../src/core/index.ts"

const path = process.argv[2] as string
const ledger = new ActionLedger({
  storage: new FileLedgerStorage(path, { lockTimeout: 1 }),
  onWarning: () => {},
})
const t = ledger.tool({ name: "t" }, async () => "ran")
const t0 = Date.now()
const answer = await t({}, { requestId: "r1" }).then(
  (v) => v,
  (e: { code?: string }) => e.code,
)
console.log(JSON.stringify({ answer, ms: Date.now() - t0 }))
