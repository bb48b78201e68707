// SCAN may return a key more than once (Redis documents it; a keyspace that shrinks mid-scan, as another tenant
// deletes its keys, does it: 300 tasks listed 301 times against the local Redis). The task store listed each key it
// was given, so `TaskLedger.list()` (and `mycelium tasks list`) showed such a task twice.
import { afterAll, describe, expect, it } from "vitest"
import type { UpstashClient } from "../../src/adapters/upstash.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { dropKeys, requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const prefix = `mycelium-test-${runTag("task-scan")}:task:`
afterAll(() => dropKeys(`${prefix.slice(0, -":task:".length)}*`))

/** The real client, whose SCAN also answers each page's keys again in the next page, as a shrinking keyspace may. */
function repeatingScan(redis: UpstashClient): UpstashClient & { scans: number } {
  let previous: unknown[] = []
  const client = {
    scans: 0,
    createScript: (src: string) => redis.createScript(src),
    async scan(cursor: string | number, options: { match: string; count: number }) {
      client.scans++
      const [next, keys] = (await redis.scan(cursor, options)) as [string, unknown[]]
      const page = [...keys, ...previous]
      previous = keys
      return [next, page]
    },
  }
  return client
}

describe("UpstashTaskStore.list() when SCAN repeats keys", () => {
  it("yields each task once", async () => {
    await requireUpstash()
    const redis = repeatingScan(upstashClient())
    const tasks = new TaskLedger({ storage: new UpstashTaskStore({ redis, prefix }), onWarning: () => {} })
    let runs = 0
    const job = tasks.task({ name: "job" }, async (a: { i: number }) => {
      runs++
      return a.i
    })
    for (let i = 0; i < 300; i += 50)
      await Promise.all(Array.from({ length: 50 }, (_, k) => job({ i: i + k }, { taskId: `job-${i + k}` })))
    expect(runs).toBe(300)
    const ids = (await tasks.list()).map((t) => t.row.request_id)
    // Pages of 500 buckets: the repeats came in the later pages (before: 300 and then some repeated).
    expect(redis.scans).toBeGreaterThan(1)
    expect(ids.length).toBe(300)
    expect(new Set(ids).size).toBe(300)
  })
})
