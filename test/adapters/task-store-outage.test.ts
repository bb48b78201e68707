// A task store that is down or stops answering: the task ledger fails closed with one typed error, as the action
// ledger does (TaskStoreUnavailableError, the driver's error as its cause), and no body runs without its claim.
import { Redis } from "@upstash/redis"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonTimeoutError } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { UpstashTaskStore } from "../../src/adapters/upstash-tasks.ts"
import { TaskLedger, TaskLedgerError, TaskStoreUnavailableError } from "../../src/core/tasks/index.ts"
import {
  DATABASE_URL,
  NEON_WS_PROXY,
  requireUpstash,
  runTag,
  UPSTASH_URL,
  upstashClient,
} from "./servers/env.ts"
import { neonPool } from "./servers/neon.ts"
import { freePorts } from "./servers/private-servers.ts"
import { startRestFaultProxy } from "./servers/rest-fault-proxy.ts"
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
    // Set up without a limit: only the calls after the stall may meet the timeout.
    await new NeonTaskStore({ pool, table: `taskout_${tag}`, timeout: null }).migrate()
    const storage = new NeonTaskStore({ pool, table: `taskout_${tag}`, timeout: 0.5 })
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

// A lease renewal whose answer never came (a timeout, a reset) may still have been written. The next write of the
// held task then finds a version it never saw: its own write's, not a rival's. Read as a takeover, the worker
// would drop its finished result and leave the row in flight, so the next worker ran the body again.
describe("task ledger: a renewal that landed after its error", () => {
  /** Runs one task whose body renews its lease once through `renewWhere` (which makes the renewal's answer fail
   * after it was written) and then returns; the stored status, the warnings and how often the body ran. */
  async function landedRenewal(
    storage: ConstructorParameters<typeof TaskLedger>[0] & object,
    renewWhere: {
      before(requestId: string): Promise<void>
      after(): Promise<void>
    },
  ) {
    const warnings: string[] = []
    const ledger = new TaskLedger({
      ...storage,
      leaseTtl: 60,
      // No timed renewals: the body's one renewLease() is the only one (an interval not shorter than the lease is refused).
      leaseRenewInterval: 0,
      onWarning: (m) => warnings.push(m),
    })
    let runs = 0
    let renewal: unknown = null
    const work = ledger.task({ name: "settle" }, async (_args: { day: string }, ctx) => {
      runs++
      await renewWhere.before(ctx.requestId)
      renewal = await ctx.renewLease().then(
        () => "renewed",
        (e: unknown) => e,
      )
      await renewWhere.after()
      return `settled-${runs}`
    })
    const first = await work({ day: "2026-12-04" })
    const stored = (await ledger.list())[0]
    const again = await work({ day: "2026-12-04" })
    return {
      first,
      again,
      runs,
      warnings,
      renewal,
      status: stored?.row.status,
      n: (await ledger.list()).length,
    }
  }

  it("Postgres: a renewal that times out on a locked row and commits later; the result is kept, run once", async () => {
    const table = `tasklanded_${tag}`
    const pool = new pg.Pool({ connectionString: DATABASE_URL })
    const locker = new pg.Pool({ connectionString: DATABASE_URL })
    closers.push(async () => {
      await locker.query(`DROP TABLE IF EXISTS ${table}`)
      await locker.end()
      await pool.end()
    })
    await new NeonTaskStore({ pool, table, timeout: null }).migrate()
    // Room for a loaded machine: the claim and completion must answer in time, only the blocked renewal may not.
    const storage = new NeonTaskStore({ pool, table, timeout: 1.5 })
    let lock: pg.PoolClient | null = null
    let heartbeat = 0
    const out = await landedRenewal(
      { storage },
      {
        // Another transaction holds the row: the renewal's UPDATE waits past the store's timeout, then commits.
        async before(requestId) {
          lock = await locker.connect()
          await lock.query("BEGIN")
          const r = await lock.query(`SELECT mycelium_lease FROM ${table} WHERE request_id = $1 FOR UPDATE`, [
            requestId,
          ])
          heartbeat = r.rows[0].mycelium_lease.heartbeat_at
        },
        async after() {
          await lock?.query("COMMIT")
          lock?.release()
          // Wait until the timed-out UPDATE has committed.
          for (let i = 0; i < 100; i++) {
            const r = await locker.query(`SELECT mycelium_lease FROM ${table}`)
            if (r.rows[0].mycelium_lease.heartbeat_at !== heartbeat) return
            await new Promise((res) => setTimeout(res, 20))
          }
          throw new Error("the renewal never committed")
        },
      },
    )
    expect(out.renewal).toBeInstanceOf(TaskStoreUnavailableError)
    expect((out.renewal as Error).cause).toBeInstanceOf(NeonTimeoutError)
    expect(out).toMatchObject({ first: "settled-1", again: "settled-1", runs: 1, status: "completed", n: 1 })
    expect(out.warnings).toEqual([])
  })

  it("Upstash: a renewal whose answer (and its resend's) is cut after Redis ran it; the result is kept, run once", async () => {
    await requireUpstash()
    const proxy = await startRestFaultProxy(UPSTASH_URL)
    closers.push(() => proxy.close())
    // The client resends a cut request once (its resend mark answers the first run's version): cut both.
    let cuts = 0
    proxy.onRequest = (commands) => {
      const cmd = String(commands[0]?.[0] ?? "").toLowerCase()
      if (cuts > 0 && (cmd === "evalsha" || cmd === "eval")) {
        cuts--
        return "cut"
      }
      return "relay"
    }
    const storage = new UpstashTaskStore({
      redis: upstashClient(proxy.url, { retry: false }),
      prefix: `${tag}:task:`,
    })
    const out = await landedRenewal(
      { storage },
      {
        async before() {
          cuts = 2
        },
        async after() {},
      },
    )
    expect(proxy.cuts).toBe(2)
    expect(out.renewal).toBeInstanceOf(TaskStoreUnavailableError)
    expect(out).toMatchObject({ first: "settled-1", again: "settled-1", runs: 1, status: "completed", n: 1 })
    expect(out.warnings).toEqual([])
  })
})
