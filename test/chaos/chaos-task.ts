// The task the task chaos runs, in its workers and its drainer: a body that logs its run to an append-only file
// outside the ledger (`<ms> start|done|abort|late|signal <id> <owner> <fence>`), so the parent checks runs, overlaps and
// results against what the bodies did, not against what the store says.
import { appendFileSync } from "node:fs"
import type { TaskFunction, TaskLedger } from "../../src/tasks.ts"

/** What a run returns: derived from the id and the fence, so a stored result names the run that wrote it. */
export const chaosResult = (id: string, fence: number): string => `${id}@${fence}`

export function chaosTask(ledger: TaskLedger, runsLog: string): TaskFunction<{ id: string }, string> {
  const owner = ledger.owner
  const log = (what: string, id: string, fence: number) =>
    appendFileSync(runsLog, `${Date.now()} ${what} ${id} ${owner} ${fence}\n`)
  return ledger.task({ name: "chaos_report" }, async (args: { id: string }, ctx) => {
    // Handed a lease that lapsed already (stalled between the claim and here): a careful body does not begin.
    if (ctx.signal.aborted) {
      log("late", args.id, ctx.fence)
      throw ctx.signal.reason
    }
    log("start", args.id, ctx.fence)
    // Logged whenever it comes, also after the body returned: did a holder that lost its lease ever learn so?
    ctx.signal.addEventListener("abort", () => log("signal", args.id, ctx.fence), { once: true })
    // Work in steps that heed ctx.signal, then a last one that does not look (as a body's final write often
    // does not): a stall there wakes to a done run whose completion the fence must refuse.
    for (let step = 0; step < 3; step++) {
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 40))
      if (ctx.signal.aborted) {
        log("abort", args.id, ctx.fence)
        throw ctx.signal.reason
      }
    }
    await new Promise((r) => setTimeout(r, 40 + Math.random() * 60))
    log("done", args.id, ctx.fence)
    return chaosResult(args.id, ctx.fence)
  })
}
