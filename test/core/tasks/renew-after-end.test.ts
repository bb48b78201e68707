// Found by an audit: a body's ctx.renewLease() called after its call ended (completed or failed) still wrote. It put
// a live lease_until back on the finished row, and armed the lapse watch, so ctx.signal later aborted with
// TaskLeaseLostError though nothing was lost. A renewal after the end does nothing.
import { describe, expect, it } from "vitest"
import { MemoryTaskStore, type TaskContext, TaskLedger } from "../../../src/tasks.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("ctx.renewLease() after the task's call ended", () => {
  for (const outcome of ["completed", "failed"] as const)
    it(`writes nothing on a ${outcome} task, and ctx.signal never aborts`, async () => {
      const storage = new MemoryTaskStore()
      let writes = 0
      const swap = storage.swap.bind(storage)
      storage.swap = (...args: Parameters<typeof swap>) => {
        writes++
        return swap(...args)
      }
      // No timed renewals; a 0.2 s lease, so a renewal's lapse watch would fire within the test.
      const ledger = new TaskLedger({ storage, leaseTtl: 0.2, leaseRenewInterval: 0, onWarning: () => {} })
      let ctx!: TaskContext
      const call = ledger.task("report", async (_: object, c) => {
        ctx = c
        if (outcome === "failed") throw new Error("boom")
        return "done"
      })({}, { taskId: "R" })
      await call.catch(() => {})
      const before = await storage.get("R")
      expect(before?.row.status).toBe(outcome)
      expect(before?.lease?.lease_until).toBeNull()
      const written = writes

      await expect(ctx.renewLease()).resolves.toBeUndefined()
      await sleep(350) // past the lease a renewal would have written

      expect.soft(writes).toBe(written)
      expect.soft((await storage.get("R"))?.lease?.lease_until).toBeNull()
      expect.soft(await storage.get("R")).toEqual(before)
      expect.soft(ctx.signal.reason).toBeUndefined()
    })
})
