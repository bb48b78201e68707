// Text Postgres or a Redis key cannot keep, on the task stores (review 41). On Neon a task whose RESULT held
// U+0000 or an unpaired surrogate ran, then Postgres refused the completion (JSONB): the row stayed in flight, the
// caller was told the store was down, and once the lease lapsed the next call ran the body again. Arguments and ids
// holding such text were refused as an outage. On Upstash an id's unpaired surrogate became U+FFFD in the key, so
// "job-\ud800" and the valid "job-\ufffd" shared one row.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { LedgerConfigError } from "../../src/core/index.ts"
import {
  TaskIdAmbiguousError,
  TaskLedger,
  TaskResultUnstorableError,
  TaskStoreUnavailableError,
} from "../../src/core/tasks/index.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const table = `task_text_${runTag("t").replace(/-/g, "_")}`.toLowerCase()
const pool = neonPool()

beforeAll(async () => {
  await requirePostgres(pool)
  await new NeonTaskStore({ pool, table }).migrate()
})
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await pool.end()
})

describe("Neon task store: text Postgres cannot keep", () => {
  for (const [label, bad] of [
    ["U+0000", "a\u0000b"],
    ["an unpaired surrogate", "a\ud800b"],
  ] as const) {
    it(`a task whose result holds ${label} is recorded failed as unstorable, not left in flight`, async () => {
      const tasks = new TaskLedger({ storage: new NeonTaskStore({ pool, table }), onWarning: () => {} })
      let runs = 0
      const charge = tasks.task({ name: `charge-${label}` }, async () => {
        runs++
        return { receipt: bad }
      })
      // Before: TaskStoreUnavailableError after the body ran, and the row in flight until its lease lapsed.
      await expect(charge({ order: 1 })).rejects.toBeInstanceOf(TaskResultUnstorableError)
      const [t] = (await tasks.list()).filter((x) => x.row.task === `charge-${label}`)
      expect(t?.row).toMatchObject({ status: "failed", result: null })
      expect(t?.row.error).toMatch(/U\+0000 or an unpaired surrogate/)
      expect(runs).toBe(1)
      // A retry runs it again, as after any failure, and the caller is told the same.
      await expect(charge({ order: 1 })).rejects.toBeInstanceOf(TaskResultUnstorableError)
      expect(runs).toBe(2)
    })
  }

  // A result whose conversion threw (a toJSON() or a getter) is recorded failed with that error's text: holding
  // U+0000 it was refused too, so the row stayed in flight after the body ran and every retry was pending.
  it("a result whose toJSON() throws a message holding U+0000 is recorded failed, not left in flight", async () => {
    const tasks = new TaskLedger({ storage: new NeonTaskStore({ pool, table }), onWarning: () => {} })
    let runs = 0
    const exportRows = tasks.task({ name: "export-rows" }, async () => {
      runs++
      return {
        toJSON() {
          throw new Error("row 7 holds \u0000 and \ud800")
        },
      }
    })
    await expect(exportRows({}, { taskId: "export-1" })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    const t = await tasks.get("export-1")
    expect(t?.row).toMatchObject({ status: "failed", result: null })
    expect(t?.row.error).toContain("row 7 holds \ufffd and \ufffd")
    expect(runs).toBe(1)
    // Before: TaskLedgerPendingError until the lease lapsed, then a second run.
    await expect(exportRows({}, { taskId: "export-1" })).rejects.toBeInstanceOf(TaskResultUnstorableError)
    expect(runs).toBe(2)
  })

  it("arguments holding U+0000 are refused before the claim, typed", async () => {
    const tasks = new TaskLedger({ storage: new NeonTaskStore({ pool, table }), onWarning: () => {} })
    let runs = 0
    const note = tasks.task({ name: "note" }, async (a: { text: string }) => {
      runs++
      return a.text.length
    })
    await expect(note({ text: "a\u0000b" }, { taskId: "note-1" })).rejects.toBeInstanceOf(LedgerConfigError)
    expect(runs).toBe(0)
    expect(await tasks.get("note-1")).toBeNull()
  })

  it("a task id holding an unpaired surrogate is refused typed, and so is its release", async () => {
    const tasks = new TaskLedger({ storage: new NeonTaskStore({ pool, table }), onWarning: () => {} })
    const noop = tasks.task({ name: "noop" }, async () => 1)
    await expect(noop({}, { taskId: "job-\ud800" })).rejects.toBeInstanceOf(LedgerConfigError)
    await expect(
      tasks.release("job-\u0000", { verified: "not_executed", by: "op", reason: "checked" }),
    ).rejects.toBeInstanceOf(LedgerConfigError)
  })
})

describe("Upstash task store: ids a Redis key cannot keep", () => {
  it("a valid task id is not blocked by another task's unpaired-surrogate id", async () => {
    await requireUpstash()
    const storage = new UpstashTaskStore({ redis: upstashClient(), prefix: `${runTag("text-ids")}:task:` })
    const tasks = new TaskLedger({ storage, onWarning: () => {} })
    const job = tasks.task({ name: "job" }, async (_a: object, ctx) => ctx.requestId)
    const odd = await job({}, { taskId: "job-\ud800" }).then(
      (v) => v,
      (e: unknown) => e,
    )
    expect(odd).toBeInstanceOf(TaskIdAmbiguousError)
    expect(odd).not.toBeInstanceOf(TaskStoreUnavailableError)
    expect(await job({}, { taskId: "job-\ufffd" })).toBe("job-\ufffd")
    await expect(storage.get("job-\udfff")).rejects.toBeInstanceOf(TaskIdAmbiguousError)
  })
})
