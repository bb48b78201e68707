// One task chaos worker process: runs the chaos task (chaos-task.ts) on ids of a sliding window until it is
// SIGKILLed. Every call's outcome goes to the results log: `ok <id> <result> <owner> kept|refused` (refused: the
// ledger warned that this run's completion was not recorded) or `err <id> <error name> <owner>`.
// argv: backend (a name in backends.ts) where runsLog resultsLog ids concurrency startedAtMs owner
import { appendFileSync } from "node:fs"
import { TaskLedger } from "../../src/tasks.ts"
import { backends, type ChaosBackendName } from "./backends.ts"
import { chaosTask } from "./chaos-task.ts"
import { exitWithParent } from "./exit-with-parent.ts"
import { pickIn, taskWindow } from "./id-window.ts"

const [backend, where, runsLog, resultsLog, idCount, concurrency, startedAt, owner] = process.argv.slice(
  2,
) as [ChaosBackendName, string, string, string, string, string, string, string]
const { storage } = await backends[backend].openTasks(where, false)
/** Ids whose completion (or failure) the ledger could not record: it says so only in a warning. */
const refused = new Set<string>()
const ledger = new TaskLedger({
  storage,
  owner,
  leaseTtl: 1,
  leaseRenewInterval: 0.2,
  onWarning: (m) => {
    const id = /request '([^']+)'/.exec(m)?.[1]
    if (id === undefined) return
    const kind = m.startsWith("task result discarded") ? "discarded" : "unrecorded"
    if (kind === "discarded") refused.add(id)
    appendFileSync(resultsLog, `warn ${id} ${kind} ${owner}\n`)
  },
})
const run = chaosTask(ledger, runsLog)

const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 15))
const ids = Number(idCount)
const pickId = () => `tchaos:${pickIn(taskWindow, Date.now() - Number(startedAt), ids)}`
async function loop(): Promise<never> {
  for (;;) {
    const id = pickId()
    try {
      const result = await run({ id }, { taskId: id })
      appendFileSync(resultsLog, `ok ${id} ${result} ${owner} ${refused.delete(id) ? "refused" : "kept"}\n`)
    } catch (e) {
      appendFileSync(resultsLog, `err ${id} ${(e as Error).name ?? "Error"} ${owner}\n`)
    }
    await jitter()
  }
}
exitWithParent()
process.stdout.write("READY\n")
await Promise.all(Array.from({ length: Number(concurrency) }, loop))
