// The task ledger on the Durable Object store at SQLite's 2 MB value limit, in workerd. A result whose row passed it
// ran, then the completion write was refused as an outage: the row stayed in flight, and once its lease lapsed the
// next call ran the body again (the action ledger's store declares the limit; the task store did not).
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import {
  DurableObjectTaskStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import { LedgerConfigError } from "../../src/core/index.ts"
import { TaskLedger, TaskResultUnstorableError } from "../../src/core/tasks/index.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
const name = `task-limits-${Date.now().toString(36)}`

describe("Durable Object task store: a row over SQLite's 2 MB value limit", () => {
  it("a result too big to store is recorded failed as unstorable, never left in flight", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    let runs = 0
    const report = tasks.task({ name: "report" }, async () => {
      runs++
      return { csv: "x".repeat(2_500_000) }
    })
    // Before: TaskStoreUnavailableError (SQLITE_TOOBIG) after the body ran, and the row in flight.
    await expect(report({}, { taskId: "big-1" })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    expect(runs).toBe(1)
    const t = await tasks.get("big-1")
    expect(t?.row).toMatchObject({ status: "failed", result: null })
    expect(t?.row.error).toMatch(/row limit/)
    // A retry runs it again at once (not after a lease), as after any failure.
    await expect(report({}, { taskId: "big-1" })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    expect(runs).toBe(2)
  })

  it("arguments too big for a row are refused before the claim; a result that fits completes", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    let runs = 0
    const note = tasks.task({ name: "note" }, async (a: { text: string }) => {
      runs++
      return a.text.length
    })
    await expect(note({ text: "y".repeat(2_500_000) }, { taskId: "args-1" })).rejects.toBeInstanceOf(
      LedgerConfigError,
    )
    expect(runs).toBe(0)
    expect(await tasks.get("args-1")).toBeNull()
    expect(await note({ text: "y".repeat(1_000_000) }, { taskId: "args-2" })).toBe(1_000_000)
    expect((await tasks.get("args-2"))?.row.status).toBe("completed")
    expect(runs).toBe(1)
  })
})
