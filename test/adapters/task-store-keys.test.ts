// Task store layouts shared with the Python original: an Upstash row key that is another task's tombstone key, a
// lease key under the prefix, and a Neon table migrate() has not (fully) created.
import { afterAll, describe, expect, it } from "vitest"
import { NeonSchemaMissingError } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskIdAmbiguousError, TaskLedger, TaskStoreUnavailableError } from "../../src/tasks.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

describe("upstash task store under a prefix without ':'", () => {
  // The row key of '-tomb:Y' is Y's tombstone (the original's layout): after either completed, every call of Y and
  // list() failed as an outage that never ended.
  for (const marker of ["-tomb:"])
    for (const clashFirst of [true, false])
      it(`refuses request id '${marker}Y' before any write, ${clashFirst ? "before" : "after"} task Y ran`, async () => {
        await requireUpstash()
        const redis = upstashClient()
        const prefix = `mycelium-test-${runTag("derived-key")}-task`
        const storage = new UpstashTaskStore({ redis, prefix })
        const tasks = new TaskLedger({ storage, onWarning: () => {} })
        let runs = 0
        const pay = tasks.task({ name: "pay" }, async (a: { order: string }) => ({
          paid: a.order,
          run: ++runs,
        }))
        const clash = () =>
          expect(pay({ order: "A" }, { taskId: `${marker}Y` })).rejects.toBeInstanceOf(TaskIdAmbiguousError)
        try {
          if (clashFirst) {
            await clash()
            expect(await redis.keys(`${prefix}*`)).toEqual([])
          }
          expect(await pay({ order: "B" }, { taskId: "Y" })).toEqual({ paid: "B", run: 1 })
          await clash()
          await expect(storage.get(`${marker}Y`)).rejects.toBeInstanceOf(TaskIdAmbiguousError)
          expect(await pay({ order: "B" }, { taskId: "Y" })).toEqual({ paid: "B", run: 1 })
          expect((await tasks.list()).map((t) => t.row.request_id)).toEqual(["Y"])
          expect(runs).toBe(1)
        } finally {
          const keys = await redis.keys(`${prefix.slice(0, -1)}*`)
          if (keys.length) await redis.del(...keys)
        }
      })

  // The original's RedisTaskLedgerStorage.list_all() GETs every key matching `{prefix}*` and builds each with
  // TaskLedgerEntry(**data), a TypeError for any member that is not one of its 9 fields. The lease at
  // `{prefix}-lease:{id}` lay there: one task run here made the original's list_all() fail for the whole store.
  it("every key under the prefix is a task row the original reads; '-lease:Y' is a task of its own", async () => {
    await requireUpstash()
    const redis = upstashClient()
    const prefix = `mycelium-test-${runTag("lease-key")}-task`
    const tasks = new TaskLedger({ storage: new UpstashTaskStore({ redis, prefix }), onWarning: () => {} })
    let runs = 0
    const pay = tasks.task({ name: "pay" }, async (a: { order: string }) => `${a.order}${++runs}`)
    const fields = [
      "args",
      "error",
      "finished_at",
      "kwargs",
      "request_id",
      "result",
      "started_at",
      "status",
      "task",
    ]
    try {
      expect(await pay({ order: "A" }, { taskId: "Y" })).toBe("A1")
      expect(await pay({ order: "B" }, { taskId: "-lease:Y" })).toBe("B2")
      expect(await pay({ order: "A" }, { taskId: "Y" })).toBe("A1")
      const keys = await redis.keys(`${prefix}*`)
      // Rows and the original's own tombstones (`{prefix}-tomb:`, copies of rows): nothing else.
      expect(keys.sort()).toEqual([
        `${prefix}-lease:Y`,
        `${prefix}-tomb:-lease:Y`,
        `${prefix}-tomb:Y`,
        `${prefix}Y`,
      ])
      // The client parses the JSON it gets.
      for (const k of keys) expect(Object.keys((await redis.get<object>(k)) ?? {}).sort()).toEqual(fields)
      expect((await tasks.list()).map((t) => t.row.request_id).sort()).toEqual(["-lease:Y", "Y"])
    } finally {
      const keys = await redis.keys(`${prefix.slice(0, -1)}*`)
      if (keys.length) await redis.del(...keys)
    }
  })
})

describe("neon task store before migrate()", () => {
  const pool = neonPool(undefined, 2)
  const tag = runTag("nomig").replaceAll("-", "_").toLowerCase()
  const original = `task_orig_${tag}`
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS ${original}`)
    await pool.end()
  })

  it("names migrate() for a missing table and for the original's table without mycelium_lease", async () => {
    await requirePostgres(pool)
    await pool.query(`CREATE TABLE ${original} (request_id TEXT PRIMARY KEY, payload JSONB NOT NULL)`)
    for (const table of [`task_none_${tag}`, original]) {
      const storage = new NeonTaskStore({ pool, table })
      await expect(storage.get("x")).rejects.toBeInstanceOf(NeonSchemaMissingError)
      let ran = 0
      const job = new TaskLedger({ storage }).task({ name: "job" }, async () => ++ran)
      const err = await job({}, { taskId: "x" }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(TaskStoreUnavailableError)
      expect((err as Error).cause).toBeInstanceOf(NeonSchemaMissingError)
      expect((err as Error).message).toContain("run `await storage.migrate()`")
      expect(ran).toBe(0)
    }
    await new NeonTaskStore({ pool, table: original }).migrate()
    expect(await new NeonTaskStore({ pool, table: original }).get("x")).toBeNull()
  })
})
