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
import { TaskLedger, TaskReleaseRefusedError, TaskResultUnstorableError } from "../../src/core/tasks/index.ts"

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

  // The object's row is the id's column, the row's JSON (which holds the id again) and the lease: a check of the row's
  // JSON alone passed a result whose whole row SQLite refused after the body ran (an id built from a 400 KB field).
  it("a result whose whole row (the id twice, the lease) is over the limit is recorded failed, not left in flight", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    let runs = 0
    const summarize = tasks.task({ name: "summarize", idFrom: ["doc"] }, async () => {
      runs++
      return { summary: "s".repeat(1_050_000) }
    })
    const doc = "d".repeat(400_000)
    // Before: TaskStoreUnavailableError (SQLITE_TOOBIG) after the body ran, and the row in flight.
    await expect(summarize({ doc })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    expect(runs).toBe(1)
    const t = (await tasks.list()).find((x) => x.row.task === "summarize")
    expect(t?.row).toMatchObject({ status: "failed", result: null })
    await expect(summarize({ doc })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    expect(runs).toBe(2)
  })

  it("arguments whose whole row leaves no room for a failure are refused before the claim", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    let runs = 0
    const index = tasks.task({ name: "index", idFrom: ["doc"] }, async () => {
      runs++
      return 1
    })
    // One copy of the id and the arguments is under the limit; the row holds the id twice. Before: the claim's write
    // was refused as an outage (TaskStoreUnavailableError), which no retry could end.
    await expect(index({ doc: "d".repeat(740_000) })).rejects.toBeInstanceOf(LedgerConfigError)
    expect(runs).toBe(0)
    expect((await tasks.list()).filter((x) => x.row.task === "index")).toHaveLength(0)
  })

  it("a release whose result is over the row limit is refused typed, and changes nothing", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    const fail = tasks.task({ name: "fail" }, async () => {
      throw new Error("boom")
    })
    await expect(fail({}, { taskId: "rel-1" })).rejects.toThrow("boom")
    // Before: TaskStoreUnavailableError, as if the store were down (retrying could never succeed).
    await expect(
      tasks.release("rel-1", {
        verified: "completed",
        result: "r".repeat(2_500_000),
        by: "ops",
        reason: "done by hand",
      }),
    ).rejects.toBeInstanceOf(TaskReleaseRefusedError)
    expect((await tasks.get("rel-1"))?.row).toMatchObject({ status: "failed", error: "Error: boom" })
  })
})

describe("Durable Object task store: a release's lease measured as it is stored", () => {
  // The lease holds `by` and `reason` as JSON: a reason of control characters (or quotes) takes up to six bytes a
  // character there. Measured as raw text, a 400,000-character reason passed and SQLite refused the 2.4 MB lease.
  it("a release whose reason is over the row limit once escaped is refused typed, and changes nothing", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name }),
      onWarning: () => {},
    })
    const fail = tasks.task({ name: "fail" }, async () => {
      throw new Error("boom")
    })
    await expect(fail({}, { taskId: "rel-esc" })).rejects.toThrow("boom")
    // Before: TaskStoreUnavailableError (SQLITE_TOOBIG), as if the store were down.
    for (const [by, reason] of [
      ["ops", "\u0001".repeat(400_000)],
      ["\u0001".repeat(400_000), "checked by hand"],
    ] as const)
      await expect(
        tasks.release("rel-esc", { verified: "completed", result: 1, by, reason }),
      ).rejects.toBeInstanceOf(TaskReleaseRefusedError)
    expect((await tasks.get("rel-esc"))?.row).toMatchObject({ status: "failed", error: "Error: boom" })
  })
})
