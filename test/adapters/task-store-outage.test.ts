// A task store that is down or stops answering: the task ledger fails closed with one typed error, as the action
// ledger does (TaskStoreUnavailableError, the driver's error as its cause), and no body runs without its claim.
import { Redis } from "@upstash/redis"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonTimeoutError } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskLedger, TaskLedgerError, TaskStoreUnavailableError } from "../../src/core/tasks/index.ts"
import { DATABASE_URL, NEON_WS_PROXY, runTag } from "./servers/env.ts"
import { neonPool } from "./servers/neon.ts"
import { freePorts } from "./servers/private-servers.ts"
import { type Closers, stallingProxy } from "./servers/stall.ts"

const tag = runTag("taskout").replaceAll("-", "_")
const closers: Closers = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
})

/** Runs one task and every read the ledger offers; how each ended, and how often the body ran. */
async function underOutage(ledger: TaskLedger) {
  let runs = 0
  const work = ledger.task({ name: "report" }, async () => ++runs)
  const errors = [
    await work({ day: "2026-12-04" }).catch((e: unknown) => e),
    await ledger.get("t-1").catch((e: unknown) => e),
    await ledger.list().catch((e: unknown) => e),
  ]
  return { errors, runs }
}

describe("task ledger over a store that is down", () => {
  it("Upstash refusing connections: every call is TaskStoreUnavailableError, the body never runs", async () => {
    const [port] = await freePorts(1)
    const redis = new Redis({ url: `http://127.0.0.1:${port}`, token: "t", retry: false })
    const { errors, runs } = await underOutage(new TaskLedger({ storage: new UpstashTaskStore({ redis }) }))
    expect(runs).toBe(0)
    expect(errors.map((e) => (e as Error).name)).toEqual([
      "TaskStoreUnavailableError",
      "TaskStoreUnavailableError",
      "TaskStoreUnavailableError",
    ])
    for (const e of errors) {
      expect(e).toBeInstanceOf(TaskLedgerError)
      expect((e as TaskStoreUnavailableError).code).toBe("task_store_unavailable")
      // The driver's own error stays reachable, and the message names the operation.
      expect((e as Error).cause).toBeInstanceOf(Error)
      expect((e as Error).message).toMatch(/^task store unavailable during (get|swap|list): /)
    }
  })

  it("a Neon pool whose Postgres goes quiet: the store's timeout becomes TaskStoreUnavailableError", async () => {
    const [host, portText] = NEON_WS_PROXY.split(":")
    const proxy = await stallingProxy(closers, { host: host as string, port: Number(portText) })
    const pool = neonPool(`127.0.0.1:${proxy.port}`)
    // Not awaited: ending the pool waits for its stalled connection, which only the proxy's shutdown ends.
    closers.push(() => {
      void pool.end().catch(() => {})
    })
    const storage = new NeonTaskStore({ pool, table: `taskout_${tag}`, timeout: 0.5 })
    await storage.migrate()
    closers.push(async () => {
      const direct = new pg.Pool({ connectionString: DATABASE_URL })
      await direct.query(`DROP TABLE IF EXISTS taskout_${tag}`)
      await direct.end()
    })
    proxy.stall()
    const started = Date.now()
    const { errors, runs } = await underOutage(new TaskLedger({ storage }))
    expect(Date.now() - started).toBeLessThan(6000)
    expect(runs).toBe(0)
    for (const e of errors) {
      expect(e).toBeInstanceOf(TaskStoreUnavailableError)
      expect((e as Error).cause).toBeInstanceOf(NeonTimeoutError)
    }
  })
})
