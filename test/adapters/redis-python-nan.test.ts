// A row the Python original wrote to Redis holding float("nan"): its json writes bare NaN and Infinity, which
// JSON.parse refuses. Both Redis adapters read it as json.loads does and replay it; before, every call on that
// request failed as a storage outage (LedgerStorageUnavailableError), which callers retry forever.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const base = `mycelium-test:${runTag("py-nan")}`
const prefix = `${base}:action:`
const raw = upstashClient()

const pythonRow = (id: string) =>
  `{"request_id": "${id}", "tool": "measure", "args": [], "kwargs": {"tool_call_id": "call_${id}"}, ` +
  `"status": "completed", "terminal_outcome": "COMPLETED", "fence": 1, ` +
  `"result": {"mean": NaN, "max": Infinity, "min": -Infinity, "note": "NaN: Infinity"}, "error": null, ` +
  `"started_at": 1767225600.5, "finished_at": 1767225601.5, "lease_until": null, "owner": "host-a:42"}`

beforeAll(requireUpstash)
afterAll(async () => {
  const keys = await raw.keys(`${base}:*`)
  if (keys.length) await raw.del(...keys)
})

const stores: Array<[string, () => LedgerStorage]> = [
  ["upstash", () => new UpstashLedgerStorage({ redis: upstashClient(), prefix })],
  ["redis (TCP)", () => new RedisLedgerStorage({ url: REDIS_URL, prefix })],
]

describe("Python rows holding NaN and Infinity on Redis", () => {
  for (const [name, make] of stores) {
    it(`${name}: read as json.loads reads them, and replayed without running the tool`, async () => {
      const id = `py-nan-${name.slice(0, 5)}`
      await raw.set(`${prefix}${id}`, pythonRow(id))
      const storage = make()
      try {
        const row = await storage.get(id)
        expect(row?.result).toEqual({
          mean: Number.NaN,
          max: Number.POSITIVE_INFINITY,
          min: Number.NEGATIVE_INFINITY,
          note: "NaN: Infinity",
        })
        let runs = 0
        const measure = new ActionLedger({ storage, onWarning: () => {} }).tool(
          { name: "measure" },
          async () => ++runs,
        )
        expect(await measure({}, { requestId: id })).toMatchObject({
          mean: Number.NaN,
          max: Number.POSITIVE_INFINITY,
        })
        expect(runs).toBe(0)
      } finally {
        await storage.close?.()
      }
    })
  }
})

describe("Python task rows holding NaN on Redis", () => {
  it("the task store reads them as json.loads does and replays the task without running it", async () => {
    // The original's RedisTaskLedgerStorage: json.dumps(entry.to_dict(), default=str) at {prefix}{id} and its tomb.
    const row =
      '{"request_id": "T-nan", "task": "measure", "args": [], "kwargs": {}, "status": "completed", ' +
      '"result": {"mean": NaN, "max": Infinity}, "error": null, "started_at": 1767225600.5, "finished_at": null}'
    await raw.set(`${base}:task:T-nan`, row)
    await raw.set(`${base}:task-tomb:T-nan`, row)
    const storage = new UpstashTaskStore({ redis: upstashClient(), prefix: `${base}:task:` })
    let runs = 0
    const measure = new TaskLedger({ storage, onWarning: () => {} }).task("measure", async () => ++runs)
    expect(await measure({}, { taskId: "T-nan" })).toEqual({
      mean: Number.NaN,
      max: Number.POSITIVE_INFINITY,
    })
    expect(runs).toBe(0)
  })
})
