// The Durable Object task store's list() of a tenant whose tasks together outgrow one RPC answer, in workerd. Every
// task came back in one answer, each parsed beside its version (its stored text again): 11 tasks of 1.7 MB made 37 MB,
// over the 32 MiB an RPC may return, and TaskLedger.list() failed for good. The object now answers pages of stored text.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import {
  DurableObjectTaskStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import { TaskLedger } from "../../src/core/tasks/index.ts"
import type { TaskRow } from "../../src/core/tasks/record.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
const run = `task-list-${Date.now().toString(36)}`

const row = (id: string, result: string): TaskRow => ({
  request_id: id,
  task: "t",
  args: [],
  kwargs: {},
  status: "completed",
  result,
  error: null,
  started_at: 1,
  finished_at: 2,
})

describe("Durable Object task store: list() in pages", () => {
  it("lists every task when their rows together pass 32 MiB (each row is within the store's limit)", async () => {
    const tasks = new TaskLedger({
      storage: new DurableObjectTaskStore(LEDGER, { name: `${run}-big` }),
      onWarning: () => {},
    })
    const report = tasks.task({ name: "report" }, async (a: { i: number }) => ({
      csv: `${a.i}`.padEnd(1_700_000, "x"),
    }))
    for (let i = 0; i < 11; i++) await report({ i }, { taskId: `t-${i}` })
    expect((await tasks.get("t-10"))?.row.status).toBe("completed")
    // Before: TaskStoreUnavailableError ("Serialized RPC arguments or return values are limited to 32MiB").
    const all = await tasks.list()
    expect(all.map((t) => t.row.request_id).sort()).toEqual(
      Array.from({ length: 11 }, (_, i) => `t-${i}`).sort(),
    )
    expect(all.every((t) => t.row.status === "completed")).toBe(true)
  })

  it("pages go on after ids SQLite reads back otherwise (unpaired surrogates), each task once, its version the stored one", async () => {
    const store = new DurableObjectTaskStore(LEDGER, { name: `${run}-keys` })
    // Neighbours in SQLite's key order whose text reads back alike ('\ud800' as three U+FFFD), 1.7 MB each so that a
    // page ends among them.
    const ids = [
      "k-\ud7ff",
      "k-\ud800",
      "k-\ud800x",
      "k-\udbff",
      "k-\ue000",
      "k-\ufffd\ufffd\ufffd",
      "k-\ufffd",
      "k-z",
    ]
    for (const [i, id] of ids.entries()) {
      const lease = i % 2 ? { fence: 1, owner: "w", lease_until: null, heartbeat_at: 1, started_at: 1 } : null
      expect(await store.swap(id, null, { row: row(id, "r".repeat(1_700_000)), lease })).not.toBeNull()
    }
    const listed: string[] = []
    for await (const t of store.list()) {
      listed.push(t.row.request_id)
      // What swap compares: the same token get() gives.
      expect(t.version).toBe((await store.get(t.row.request_id))?.version)
    }
    expect(listed.length).toBe(ids.length)
    expect(new Set(listed)).toEqual(new Set(ids))
  })

  it("an empty store lists nothing; a small one in one page", async () => {
    const store = new DurableObjectTaskStore(LEDGER, { name: `${run}-small` })
    const none: unknown[] = []
    for await (const t of store.list()) none.push(t)
    expect(none).toEqual([])
    for (const id of ["", "b", "a"]) await store.swap(id, null, { row: row(id, "ok"), lease: null })
    const listed: string[] = []
    for await (const t of store.list()) listed.push(t.row.request_id)
    expect(listed).toEqual(["", "a", "b"])
  })
})
