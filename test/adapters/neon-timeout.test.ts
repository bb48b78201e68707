// The Neon stores' own `timeout`: a pool or neon() function built in code, with none of the driver's limits set,
// still fails a statement that Postgres stops answering, and the ledger fails the call closed with its body unrun.
import { neon, neonConfig } from "@neondatabase/serverless"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage, NeonTimeoutError } from "../../src/adapters/neon.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { InvalidOptionError } from "../../src/core/errors.ts"
import { ActionLedger, LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { DATABASE_URL, dropLedgerTable, NEON_WS_PROXY, runTag } from "./servers/env.ts"
import { neonPool } from "./servers/neon.ts"
import { type Closers, silentHttp, stallingProxy } from "./servers/stall.ts"

const tag = runTag("neonto").replaceAll("-", "_")
const table = `neonto_${tag}`
const closers: Closers = []
const direct = new pg.Pool({ connectionString: DATABASE_URL })
afterAll(async () => {
  for (const close of closers.reverse()) await close()
  await dropLedgerTable(direct, table)
  await direct.query(`DROP TABLE IF EXISTS ${table}_tasks`)
  await direct.end()
})

/** The limit of a store that must first answer through the proxy: a loaded machine's statements fit in it. */
const SETTLE = 1.5

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

/** A Neon pool through a proxy in front of the WebSocket proxy; `stall()` makes Postgres go quiet. */
async function stallablePool() {
  const [host, port] = NEON_WS_PROXY.split(":")
  const proxy = await stallingProxy(closers, { host: host as string, port: Number(port) })
  const pool = neonPool(`127.0.0.1:${proxy.port}`)
  // Not awaited: ending a pool waits for its stalled connection, which only the proxy's shutdown ends.
  closers.push(() => {
    void pool.end().catch(() => {})
  })
  return { pool, stall: proxy.stall }
}

describe("Neon stores: timeout", () => {
  it("a Pool whose Postgres stops answering: the call fails closed within the timeout, its body unrun", async () => {
    const { pool, stall } = await stallablePool()
    // Set up without a limit, and with room for a loaded machine: only the stalled call may meet the timeout.
    await new NeonLedgerStorage({ pool: direct, table }).migrate()
    let runs = 0
    const body = async () => ++runs
    // The first call opens the pool's connection through the proxy, without a limit: on a loaded machine that alone
    // took over 1.5 s. Only the call made after the stall runs under the store's timeout.
    const warm = new ActionLedger({ storage: new NeonLedgerStorage({ pool, table }) }).tool(
      { name: "charge", binding },
      body,
    )
    expect(await warm({ cents: 1 }, { toolCallId: `first-${tag}` })).toBe(1)
    const storage = new NeonLedgerStorage({ pool, table, timeout: SETTLE })
    const charge = new ActionLedger({ storage }).tool({ name: "charge", binding }, body)
    stall()
    const started = Date.now()
    const error = await charge({ cents: 2 }, { toolCallId: `second-${tag}` }).catch((e: unknown) => e)
    const ms = Date.now() - started
    expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((error as Error).cause).toBeInstanceOf(NeonTimeoutError)
    expect((error as Error).message).toMatch(/within 1\.5 s \(timeout\)/)
    expect(ms).toBeGreaterThanOrEqual(1450)
    expect(ms).toBeLessThan(6000)
    expect(runs).toBe(1)
  })

  it("the task store over the same kind of pool: NeonTimeoutError, code neon_timeout", async () => {
    const { pool, stall } = await stallablePool()
    await new NeonTaskStore({ pool: direct, table: `${table}_tasks` }).migrate()
    const tasks = new NeonTaskStore({ pool, table: `${table}_tasks`, timeout: SETTLE })
    stall()
    const started = Date.now()
    await expect(tasks.get("task-1")).rejects.toMatchObject({ code: "neon_timeout" })
    expect(Date.now() - started).toBeLessThan(6000)
  })

  it("neon() over HTTP whose endpoint never answers", async () => {
    const server = await silentHttp(closers)
    const before = neonConfig.fetchEndpoint
    neonConfig.fetchEndpoint = `http://127.0.0.1:${server.port}/sql`
    try {
      const storage = new NeonLedgerStorage({ sql: neon(DATABASE_URL), table, timeout: 0.5 })
      const started = Date.now()
      await expect(storage.get("r-1")).rejects.toBeInstanceOf(NeonTimeoutError)
      expect(Date.now() - started).toBeLessThan(3000)
      expect(server.requests()).toBe(1)
    } finally {
      neonConfig.fetchEndpoint = before
    }
  })

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 86_401, "5"])(
    "refuses timeout %s when the store is made",
    (timeout) => {
      expect(
        () => new NeonLedgerStorage({ sql: neon(DATABASE_URL), table, timeout: timeout as number }),
      ).toThrow(InvalidOptionError)
      expect(() => new NeonTaskStore({ pool: direct, timeout: timeout as number })).toThrow(/timeout/)
    },
  )

  it("null is taken: no limit, and a store that answers works as before", async () => {
    const storage = new NeonLedgerStorage({ pool: direct, table, timeout: null })
    await storage.migrate()
    expect(await storage.get("absent")).toBeNull()
  })
})
