// One OS process of the task race: `calls` concurrent callers of one task on a shared store. Each run of the body
// appends to an effects file, so the parent counts runs from the outside. Prints a JSON summary of outcomes.
import { appendFileSync, existsSync } from "node:fs"
import { TaskLedger, TaskLedgerPendingError } from "../../../src/tasks.ts"
import { openTaskStore, type TaskBackend } from "./task-storage.ts"

const [backend, where, taskId, effects, goFile, calls] = process.argv.slice(2) as [
  TaskBackend,
  string,
  string,
  string,
  string,
  string,
]
const { storage, close } = await openTaskStore(backend, where)
const ledger = new TaskLedger({ storage, leaseTtl: 60, leaseRenewInterval: 0, onWarning: () => {} })
const job = ledger.task({ name: "race" }, async () => {
  appendFileSync(effects, `${process.pid}\n`)
  await new Promise((r) => setTimeout(r, 300))
  return "done"
})
process.stderr.write("ready\n")
while (!existsSync(goFile)) await new Promise((r) => setTimeout(r, 1))
const results = await Promise.allSettled(Array.from({ length: Number(calls) }, () => job({}, { taskId })))
const summary = { ok: 0, pending: 0, other: [] as string[] }
for (const r of results) {
  if (r.status === "fulfilled") summary.ok++
  else if (r.reason instanceof TaskLedgerPendingError) summary.pending++
  else summary.other.push(String(r.reason))
}
process.stdout.write(`${JSON.stringify(summary)}\n`)
await close()
