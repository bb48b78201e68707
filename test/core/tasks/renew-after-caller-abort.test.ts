// Found by the task model (model-random.test.ts, seed 45281): a body whose caller had given up called renewLease()
// after an operator released its task, and got the caller's abort reason instead of TaskLeaseLostError, so it could
// not tell that the task was no longer its own (docs/tasks.md: renewLease "throws TaskLeaseLostError when another
// worker has taken the task over").
import { describe, expect, it } from "vitest"
import { MemoryTaskStore, type TaskContext, TaskLeaseLostError, TaskLedger } from "../../../src/tasks.ts"

describe("a renewal refused after the caller gave up", () => {
  it("throws TaskLeaseLostError, not the caller's reason, and the caller still gets its own reason", async () => {
    const storage = new MemoryTaskStore()
    const worker = new TaskLedger({ storage, owner: "w", leaseRenewInterval: 0, onWarning: () => {} })
    const ops = new TaskLedger({ storage, owner: "ops" })
    let ctx!: TaskContext
    let go!: () => void
    const gate = new Promise<void>((r) => (go = r))
    let renewal: unknown
    const caller = new AbortController()
    const gaveUp = new Error("caller gave up")
    const call = worker.task("report", async (_: object, c) => {
      ctx = c
      await gate
      renewal = await c.renewLease().then(
        () => "renewed",
        (e: unknown) => e,
      )
      return "done"
    })({}, { taskId: "R", signal: caller.signal })
    while (!ctx) await new Promise((r) => setImmediate(r))
    await ops.release("R", { verified: "not_executed", by: "ops", reason: "worker host lost", force: true })
    caller.abort(gaveUp)
    go()
    await expect(call).resolves.toBe("done")
    expect(renewal).toBeInstanceOf(TaskLeaseLostError)
    expect(ctx.signal.reason).toBe(gaveUp)
    expect((await storage.get("R"))?.row.status).toBe("failed")
  })
})
