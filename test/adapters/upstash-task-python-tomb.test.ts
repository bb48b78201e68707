// A task prefix ending in more than one ':' on a Redis shared with the Python original: its tombstones are at
// `{prefix.rstrip(":")}-tomb:{id}` (the action store's rule too, test/adapters/redis-python-tomb.test.ts). The task
// store stripped one ':' only, so it never saw the original's tombstone: a task the original claimed, whose worker
// died and whose row key's in-flight TTL then ended, read as never run here and ran a second time.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskLedger, TaskLedgerPendingError } from "../../src/tasks.ts"
import { dropKeys, requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const root = `mycelium-test:${runTag("py-task-tomb")}`
/** Each test's own keys: the first one lists every task under its prefix. */
const keys = (test: string) => {
  const base = `${root}-${test}`
  return { base, prefix: `${base}:task::` }
}
const raw = upstashClient()

beforeAll(requireUpstash)
afterAll(() => dropKeys(`${root}*`))

describe("task store, prefix ending in '::', shared with the Python original", () => {
  it("an in-flight task the original claimed, its row key expired, is pending, not run again", async () => {
    const { base, prefix } = keys("in-flight")
    // json.dumps(TaskLedgerEntry.to_dict()) as the original leaves it: only the tombstone outlives the key's TTL.
    const row =
      '{"request_id": "T-1", "task": "charge", "args": [], "kwargs": {"amount": 100}, "status": "in-flight", ' +
      '"result": null, "error": null, "started_at": 1767225600.5, "finished_at": null}'
    await raw.set(`${base}:task-tomb:T-1`, row)
    const storage = new UpstashTaskStore({ redis: upstashClient(), prefix })
    let runs = 0
    const charge = new TaskLedger({ storage, onWarning: () => {} }).task("charge", async () => ++runs)
    await expect(charge({ amount: 100 }, { taskId: "T-1" })).rejects.toBeInstanceOf(TaskLedgerPendingError)
    expect(runs).toBe(0)
    const listed: string[] = []
    for await (const t of storage.list()) listed.push(t.row.request_id)
    expect(listed).toEqual(["T-1"])
  })

  it("a task run here leaves its tombstone where the original reads it", async () => {
    const { base, prefix } = keys("run-here")
    const storage = new UpstashTaskStore({ redis: upstashClient(), prefix })
    const charge = new TaskLedger({ storage, onWarning: () => {} }).task("charge", async () => "ok")
    expect(await charge({ amount: 5 }, { taskId: "T-2" })).toBe("ok")
    expect(await raw.get(`${base}:task-tomb:T-2`)).toMatchObject({ request_id: "T-2", status: "completed" })
    expect(await raw.get(`${prefix}T-2`)).toMatchObject({ request_id: "T-2", status: "completed" })
  })

  // Versions before 2026-12-07 stripped one ':': their tombstone and lease keys were `app:task:-tomb:` and
  // `app:task:-lease:`. Listed by tombstone alone, the tasks they wrote vanished from `mycelium tasks list`.
  it("a task an older version left in flight is still listed, pending, and released as one without a lease", async () => {
    const { base, prefix } = keys("older")
    const row = { request_id: "T-3", task: "charge", args: [], kwargs: {}, status: "in-flight", result: null }
    const old = { ...row, error: null, started_at: 1767225600.5, finished_at: null }
    await raw.set(`${prefix}T-3`, JSON.stringify(old))
    await raw.set(`${base}:task:-tomb:T-3`, JSON.stringify(old))
    await raw.set(`${base}:task:-lease:T-3`, JSON.stringify({ owner: "w-old", lease_until: 1767229200.5 }))
    const storage = new UpstashTaskStore({ redis: upstashClient(), prefix })
    const ledger = new TaskLedger({ storage, onWarning: () => {} })
    let runs = 0
    const charge = ledger.task("charge", async () => ++runs)
    await expect(charge({}, { taskId: "T-3" })).rejects.toBeInstanceOf(TaskLedgerPendingError)
    const listed = (await ledger.list()).map((t) => [t.row.request_id, t.row.status, t.lease])
    expect(listed.filter(([id]) => id === "T-3")).toEqual([["T-3", "in-flight", null]])
    await ledger.release("T-3", { verified: "not_executed", by: "ops", reason: "upgrade" })
    expect(await charge({}, { taskId: "T-3" })).toBe(1)
    expect(runs).toBe(1)
  })
})
