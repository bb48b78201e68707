// A worker that claims a task, records that its body started (in a file outside the ledger), prints READY and
// hangs until the parent SIGKILLs it.
import { appendFileSync } from "node:fs"
import { TaskLedger } from "../../../src/tasks.ts"
import { hang } from "../../hang.ts"
import { openTaskStore, type TaskBackend } from "./task-storage.ts"

const [backend, where, taskId, runsFile, leaseTtl] = process.argv.slice(2) as [
  TaskBackend,
  string,
  string,
  string,
  string,
]
const { storage } = await openTaskStore(backend, where)
const ledger = new TaskLedger({
  storage,
  leaseTtl: Number(leaseTtl),
  owner: "doomed-child",
  onWarning: () => {},
})
const job = ledger.task({ name: "nightly_report" }, async () => {
  appendFileSync(runsFile, "child\n")
  process.stdout.write("READY\n")
  await hang()
})
await job({ day: "2026-12-01" }, { taskId })
