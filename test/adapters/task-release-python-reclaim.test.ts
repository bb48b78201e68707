// A task an operator released, then claimed again by the Python original, whose worker died: the original's claim
// writes the row alone (the rows file, the `payload` column), so the lease beside it still held the first release's
// verdict, and release() read that verdict as standing. Every call answered "pending: release it if its worker is
// gone" and every release was refused: stranded for good. A verdict in a lease older than the row is spent.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import {
  MemoryTaskStore,
  TaskLedger,
  TaskLedgerPendingError,
  TaskReleaseRefusedError,
  type TaskStore,
} from "../../src/tasks.ts"
import { runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-task-reclaim-"))
const pool = neonPool(undefined, 2)
const table = `task_reclaim_${runTag("t").replaceAll("-", "_")}`.toLowerCase()
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {})
  await pool.end()
})

/** A store, and what the original's claim writes to it: a newer in-flight row, its lease untouched. */
type Case = [string, () => Promise<[TaskStore, (id: string) => Promise<void>]>]

const cases: Case[] = [
  [
    "memory",
    async () => {
      const store = new MemoryTaskStore()
      return [
        store,
        async (id) => {
          const cur = await store.get(id)
          if (!cur) throw new Error("no row")
          const row = { ...cur.row, status: "in-flight" as const, error: null, finished_at: null }
          await store.swap(id, cur.version, {
            row: { ...row, started_at: cur.row.started_at + 5 },
            lease: cur.lease,
          })
        },
      ]
    },
  ],
  [
    "file",
    async () => {
      const path = join(dir, `${runTag("f")}.json`)
      return [
        new FileTaskStore(path, { fsync: false }),
        async (id) => {
          // The rows file only; the lease sidecar is this package's, which the original never reads or writes.
          const rows = JSON.parse(readFileSync(path, "utf8"))
          const r = rows[id]
          rows[id] = {
            ...r,
            status: "in-flight",
            error: null,
            started_at: r.started_at + 5,
            finished_at: null,
          }
          writeFileSync(path, JSON.stringify(rows, null, 2))
        },
      ]
    },
  ],
  [
    "neon",
    async () => {
      await requirePostgres(pool)
      const store = new NeonTaskStore({ pool, table })
      await store.migrate()
      return [
        store,
        async (id) => {
          // The original's claim: the payload column only (it has no mycelium_lease).
          await pool.query(
            `UPDATE ${table} SET payload = payload || jsonb_build_object('status', 'in-flight', 'error', null, ` +
              `'finished_at', null, 'started_at', (payload->>'started_at')::float8 + 5) WHERE request_id = $1`,
            [id],
          )
        },
      ]
    },
  ],
]

describe.each(cases)("%s task store", (_name, open) => {
  it("a task the original re-claimed after a release, its worker gone, is released again and runs", async () => {
    const [store, pythonClaims] = await open()
    const tasks = new TaskLedger({ storage: store, leaseTtl: 60, onWarning: () => {} })
    const id = `T-${runTag("r")}`
    let runs = 0
    const pay = tasks.task("pay", async () => {
      if (++runs === 1) throw new Error("gateway down")
      return "paid"
    })
    await expect(pay({}, { taskId: id })).rejects.toThrow("gateway down")
    await tasks.release(id, { verified: "not_executed", by: "ops", reason: "checked: not charged" })
    await pythonClaims(id)
    await expect(pay({}, { taskId: id })).rejects.toBeInstanceOf(TaskLedgerPendingError)
    const released = await tasks.release(id, {
      verified: "not_executed",
      by: "ops2",
      reason: "python host lost",
    })
    expect(released.lease).toMatchObject({ resolved_by: "ops2", resolution_reason: "python host lost" })
    // The new verdict stands until the task runs again: a second one is refused.
    await expect(
      tasks.release(id, { verified: "completed", by: "ops3", reason: "x", result: "forged" }),
    ).rejects.toBeInstanceOf(TaskReleaseRefusedError)
    expect(await pay({}, { taskId: id })).toBe("paid")
    expect(runs).toBe(2)
  })
})
