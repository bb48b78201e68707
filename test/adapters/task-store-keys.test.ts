// Task store layouts shared with the Python original: an Upstash row key that is another task's lease or tombstone
// key, and a Neon table migrate() has not (fully) created.
import { afterAll, describe, expect, it } from "vitest"
import { NeonSchemaMissingError } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskIdAmbiguousError, TaskLedger, TaskStoreUnavailableError } from "../../src/tasks.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

describe("upstash task store under a prefix without ':'", () => {
  // The row key of '-lease:Y' is Y's lease key, that of '-tomb:Y' Y's tombstone: after either completed, every call
  // of Y and list() failed as an outage that never ended.
  for (const marker of ["-lease:", "-tomb:"])
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
          const keys = await redis.keys(`${prefix}*`)
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
