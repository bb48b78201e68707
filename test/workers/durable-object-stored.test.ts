// What a deployed Durable Object already holds stays valid across a deploy: the tables it created (SQLite keeps
// their text), a stored row SQLite refuses to replace, a rewritten row's place among its dispatch siblings, and a
// task claimed before the deploy under the version form the object gave then (canonical JSON; it now gives the
// stored text), which the task ledger must finish exactly once.
import { runInDurableObject } from "cloudflare:test"
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { DurableObjectTaskStore } from "../../src/adapters/durable-object-guards.ts"
import {
  type JsonValue,
  type LedgerEntry,
  type LedgerStorage,
  MemoryLedgerStorage,
  type TransitionExpectation,
} from "../../src/core/index.ts"
import { recordVersion } from "../../src/core/tasks/store.ts"
import { TaskLedger, type TaskStore } from "../../src/tasks.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const run = `s${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`

interface SqlState {
  storage: { sql: { exec(q: string): { toArray(): Array<Record<string, string>> } } }
}

describe("a Durable Object's stored data across deploys", () => {
  it("creates the Python original's tables and index, and the task, state and receipt tables, as before", async () => {
    const name = `schema-${run}`
    await new DurableObjectLedgerStorage(LEDGER, { name }).get("x")
    const stub = LEDGER.get(LEDGER.idFromName(name)) as Parameters<typeof runInDurableObject>[0]
    const read = () =>
      runInDurableObject(stub, (_, state) =>
        (state as unknown as SqlState).storage.sql
          .exec("SELECT name, sql FROM sqlite_master WHERE name LIKE 'mycelium%' ORDER BY name")
          .toArray(),
      )
    expect(await read()).toEqual([
      {
        name: "mycelium_action_ledger",
        sql: "CREATE TABLE mycelium_action_ledger (request_id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
      },
      {
        name: "mycelium_action_ledger_tool_call_id",
        sql: "CREATE INDEX mycelium_action_ledger_tool_call_id ON mycelium_action_ledger (json_extract(payload, '$.kwargs.tool_call_id'))",
      },
      {
        name: "mycelium_ledger_meta",
        sql: "CREATE TABLE mycelium_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      },
    ])
    // The other tables on first use.
    await new DurableObjectTaskStore(LEDGER, { name }).get("x")
    expect((await read()).map((t) => t.sql)).toEqual([
      "CREATE TABLE mycelium_action_ledger (request_id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
      "CREATE INDEX mycelium_action_ledger_tool_call_id ON mycelium_action_ledger (json_extract(payload, '$.kwargs.tool_call_id'))",
      "CREATE TABLE mycelium_audit_receipt_parts (id INTEGER, part INTEGER, text TEXT NOT NULL, PRIMARY KEY (id, part))",
      "CREATE TABLE mycelium_audit_receipts (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL, ledger TEXT, seq INTEGER, digest TEXT, receipt TEXT NOT NULL, UNIQUE (ledger, seq))",
      "CREATE TABLE mycelium_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      "CREATE TABLE mycelium_state_flush (run_id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
      "CREATE TABLE mycelium_task_ledger (request_id TEXT PRIMARY KEY, payload TEXT NOT NULL, lease TEXT)",
    ])
  })

  it("a row SQLite refuses past its JSON depth leaves the stored row as it was", async () => {
    const object = LEDGER.get(LEDGER.idFromName(`deep-${run}`)) as {
      ledgerSet(e: LedgerEntry): Promise<unknown>
      ledgerGet(id: string): Promise<LedgerEntry | null>
      ledgerTransition(e: LedgerEntry, expect: TransitionExpectation): Promise<unknown>
    }
    const row = { ...newEntry({ requestId: "rid", tool: "pay", owner: "w" }, 1), fence: 1 }
    expect(await object.ledgerSet(row)).toBeNull()
    let deep: JsonValue = "leaf"
    for (let i = 0; i < 1100; i++) deep = [deep]
    const next = { ...row, terminalOutcome: "COMPLETED" as const, status: "completed" as const, result: deep }
    expect(await object.ledgerTransition(next, { outcomes: ["IN_FLIGHT"], owner: "w", fence: 1 })).toEqual({
      sqliteRefused: expect.stringMatching(/malformed JSON/),
    })
    expect(await object.ledgerGet("rid")).toEqual(row)
  })

  it("a rewritten row keeps its place among its dispatch siblings: first claimed first, as the memory store", async () => {
    // The drift gate stops at the first sibling it reads: which one decides the error (hard block or identity
    // conflict) and the prior request id it names.
    const order = async (s: LedgerStorage) => {
      const row = (id: string) => newEntry({ requestId: id, tool: "t", kwargs: { tool_call_id: "d1" } }, 1)
      const claim = (id: string) =>
        s.tryClaimInflight(row(id), 60, 100, { reclaimFence: null, dispatchId: "d1" })
      const a = await claim("a")
      await claim("b")
      if (a.outcome !== "claimed") throw new Error("a was not claimed")
      const done = { ...a.entry, terminalOutcome: "COMPLETED" as const, status: "completed" as const }
      expect(await s.tryTransition(done, { outcomes: ["IN_FLIGHT"], fence: a.entry.fence })).toBe(true)
      const c = await claim("c")
      const siblings = c.outcome === "claimed" ? (c.dispatchSiblings ?? []) : []
      return {
        siblings: siblings.map((e) => e.requestId).filter((id) => id !== "c"),
        found: (await s.findByDispatchId?.("d1"))?.map((e) => e.requestId),
      }
    }
    const expected = await order(new MemoryLedgerStorage())
    expect(expected).toEqual({ siblings: ["a", "b"], found: ["a", "b", "c"] })
    expect(await order(new DurableObjectLedgerStorage(LEDGER, { name: `siblings-${run}` }))).toEqual(expected)
  })

  it("a task claimed under the version form before the deploy completes once", async () => {
    const name = `version-${run}`
    const store = new DurableObjectTaskStore(LEDGER, { name })
    // The claim answers what the object answered before: the record's canonical JSON.
    const swaps: string[] = []
    const before: TaskStore = {
      get: (id) => store.get(id),
      swap: async (id, expected, next) => {
        const v = await store.swap(id, expected, next)
        swaps.push(v === null ? "refused" : "written")
        return v !== null && swaps.length === 1 ? recordVersion(next) : v
      },
      list: () => store.list(),
    }
    let runs = 0
    const report = new TaskLedger({ storage: before, leaseRenewInterval: 0, onWarning: () => {} }).task(
      { name: "report" },
      async () => {
        runs++
        return "done"
      },
    )
    expect(await report({ day: "d" }, { taskId: "t1" })).toBe("done")
    // The completion under the old form is refused; the ledger reads the row again and adopts its own claim.
    expect(swaps).toEqual(["written", "refused", "written"])
    const tasks = []
    for await (const t of store.list()) tasks.push(t)
    expect(tasks.map((t) => [t.row.status, t.row.result])).toEqual([["completed", "done"]])
    const [task] = tasks
    if (!task) throw new Error("no task")
    expect(await store.swap(task.row.request_id, recordVersion(task), task)).toBeNull()
    expect(await report({ day: "d" }, { taskId: "t1" })).toBe("done")
    expect(runs).toBe(1)
  })
})
