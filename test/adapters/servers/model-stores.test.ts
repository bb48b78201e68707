// The ledger's model-based random test (test/core/ledger/model-world.ts) over the real stores: each worker and the
// checker get a client of their own (a socket, an HTTP client, a file handle, a pool), each run a namespace of its
// own. A failure names its seed and store:
//   MYCELIUM_MODEL_STORES=redis MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project node test/adapters/servers/model-stores.test.ts
// Each store's default runs fit the file in about 25 s. A soak: MYCELIUM_MODEL_SECONDS (keep running each store that
// long), MYCELIUM_MODEL_RUNS (runs per store), MYCELIUM_MODEL_STEPS (default 60), MYCELIUM_MODEL_SEED (a new base);
// MYCELIUM_MODEL_STORES (names, comma-separated) picks stores; MYCELIUM_MODEL_REPORT=1 prints each store's counts.
//
// Time: the stores take `now` from the ledger's clock (the model's), except where the store keeps its own:
// - HTTP: the server's clock decides leases and ignores the client's `now`; here the app's clock is the model's
//   clock itself, so server and workers agree exactly (no skew is modelled).
// - Redis and Upstash: an in-flight key's TTL runs on the server's wall clock. It is at least 4 leases of model time
//   in wall seconds (7 days by default), and a run lasts well under a second of wall time, so no key expires in a
//   run: the tombstone path is not exercised here. Upstash ages rows with the model's clock (`now`); Redis has no
//   such option, which matters only for a row read back from its tombstone.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { neon, neonConfig } from "@neondatabase/serverless"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { HttpLedgerStorage } from "../../../src/adapters/http.ts"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { RedisLedgerStorage, RespConnection } from "../../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import { type LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { createLedgerApp } from "../../../src/edge/index.ts"
import type { SchedulerClock } from "../../core/ledger/model-clock.ts"
import type { ModelStore, ModelStoreFactory } from "../../core/ledger/model-store.ts"
import { type ModelStats, ModelWorld } from "../../core/ledger/model-world.ts"
import { DATABASE_URL, dropLedgerTable, requireUpstash, runTag, upstashClient } from "./env.ts"
import { neonPool, requirePostgres } from "./neon.ts"
import { type NeonHttpEmulation, startNeonHttpEmulation } from "./neon-http.ts"

const env = (name: string, fallback: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number >= 0, got '${v}'`)
  return n
}

const RUNS = process.env.MYCELIUM_MODEL_RUNS ? env("MYCELIUM_MODEL_RUNS", 0) : null
const SECONDS = env("MYCELIUM_MODEL_SECONDS", 0)
const STEPS = env("MYCELIUM_MODEL_STEPS", 60)
// Fixed, so CI repeats the same schedules (the order in which a real store answers overlapping calls still varies).
const BASE = env("MYCELIUM_MODEL_SEED", 45_100)
const ONLY = process.env.MYCELIUM_MODEL_STORES?.split(",").map((s) => s.trim())
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"

const TAG = runTag("model").replace(/-/g, "_")
const pool = neonPool()
const root = mkdtempSync(join(tmpdir(), "mycelium-model-"))
const tables: string[] = []
let emu: NeonHttpEmulation

beforeAll(async () => {
  await requireUpstash()
  await requirePostgres(pool)
  emu = await startNeonHttpEmulation()
  neonConfig.fetchEndpoint = emu.endpoint
})
afterAll(async () => {
  await dropKeys(`mycelium-test:${TAG}:*`)
  for (const t of tables) await dropLedgerTable(pool, t)
  await pool.end()
  await emu?.stop()
  rmSync(root, { recursive: true, force: true })
})

/** The keys the Redis and Upstash runs left (Upstash's REST server keeps them in the same Redis): a soak makes 10^5. */
async function dropKeys(match: string): Promise<void> {
  const conn = new RespConnection(REDIS_URL)
  try {
    let cursor = "0"
    do {
      const [next, keys] = (await conn.command("SCAN", cursor, "MATCH", match, "COUNT", 1000)) as [
        string,
        string[],
      ]
      if (keys.length) await conn.command("DEL", ...keys)
      cursor = next
    } while (cursor !== "0")
  } finally {
    conn.close()
  }
}

/**
 * Clients of one store that share nothing but the store; each closes with the run. `byId` where a list() scans a
 * shared Redis keyspace (slow); a Neon list is one SELECT, cheaper than a read per id.
 */
function clients(make: () => LedgerStorage, byId = false): ModelStore {
  const made: LedgerStorage[] = []
  return {
    byId,
    client() {
      const s = make()
      made.push(s)
      return s
    },
    async close() {
      for (const s of made) await s.close?.()
    },
  }
}

/** The edge app over `backing`, on the model's clock; each client its own HttpLedgerStorage. */
function overHttp(clock: SchedulerClock, backing: ModelStore): ModelStore {
  const byId = backing.byId === true
  const app = createLedgerApp({ storage: backing.client(), clock: { now: () => clock.now() } })
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch
  return {
    byId,
    client: () => new HttpLedgerStorage({ url: "http://ledger.local", fetch }),
    close: async () => backing.close?.(),
  }
}

const redis = (ns: string): ModelStore =>
  clients(() => new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${ns}:` }), true)

/** A Neon table of this file's (made on the first run), emptied before each run. */
async function neonTable(name: string, run: number): Promise<string> {
  const table = `${name}_${TAG}`
  if (run === 0) {
    await new NeonLedgerStorage({ pool, table }).migrate()
    tables.push(table)
  }
  await pool.query(`DELETE FROM ${table}`)
  return table
}

interface Lane {
  readonly name: string
  /** Runs by default: what fits the store's speed (a list() of Redis scans the shared keyspace; REST is slower). */
  readonly runs: number
  /** Before each run: a fresh namespace (or an emptied table); then the run's store. */
  open(run: number): Promise<ModelStoreFactory>
}

const LANES: Lane[] = [
  {
    name: "file",
    runs: 12,
    async open(run) {
      const path = join(root, `r${run}`, "ledger.json")
      return () => clients(() => new FileLedgerStorage(path, { fsync: false }))
    },
  },
  { name: "redis", runs: 12, open: async (run) => () => redis(`${TAG}:r${run}:redis`) },
  {
    name: "upstash",
    runs: 4,
    async open(run) {
      const prefix = `mycelium-test:${TAG}:r${run}:up:`
      return (clock) =>
        clients(
          () => new UpstashLedgerStorage({ redis: upstashClient(), prefix, now: () => clock.now() }),
          true,
        )
    },
  },
  {
    name: "neon-ws",
    runs: 6,
    async open(run) {
      const table = await neonTable("model_ws", run)
      return () => clients(() => new NeonLedgerStorage({ pool, table }))
    },
  },
  {
    name: "neon-http",
    runs: 6,
    async open(run) {
      const table = await neonTable("model_http", run)
      return () => clients(() => new NeonLedgerStorage({ sql: neon(DATABASE_URL), table }))
    },
  },
  {
    name: "http-memory",
    runs: 12,
    async open() {
      return (clock) => {
        const store = new MemoryLedgerStorage()
        return overHttp(clock, { client: () => store })
      }
    },
  },
  {
    name: "http-redis",
    runs: 4,
    open: async (run) => (clock) => overHttp(clock, redis(`${TAG}:r${run}:http`)),
  },
]

type Totals = Omit<ModelStats, "errors" | "maxPending" | "deathMarks">

describe("action ledger against the reference model, over each real store", () => {
  for (const lane of LANES) {
    if (ONLY && !ONLY.includes(lane.name)) continue
    const runs = RUNS ?? lane.runs
    it(
      `${lane.name}: ${runs} runs of ${STEPS} steps from seed ${BASE}${SECONDS ? `, or more for ${SECONDS} s` : ""}`,
      async () => {
        const totals: Totals = {
          steps: 0,
          calls: 0,
          runs: 0,
          replays: 0,
          effects: 0,
          crashes: 0,
          releases: 0,
          verdictReruns: 0,
        }
        const errors: Record<string, number> = {}
        const started = performance.now()
        let i = 0
        for (; i < runs || performance.now() - started < SECONDS * 1000; i++) {
          const seed = (BASE + i) >>> 0
          const world = new ModelWorld(seed, await lane.open(i))
          try {
            await world.run(STEPS)
          } catch (e) {
            // The store and the command that repeats this run (a store that threw names no seed of its own).
            const text = e instanceof Error ? (e.stack ?? e.message) : String(e)
            throw new Error(
              `${lane.name}, seed ${seed}: MYCELIUM_MODEL_STORES=${lane.name} MYCELIUM_MODEL_SEED=${seed} MYCELIUM_MODEL_RUNS=1\n${text}`,
            )
          }
          for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += world.stats[k]
          for (const [name, n] of Object.entries(world.stats.errors)) errors[name] = (errors[name] ?? 0) + n
        }
        const seconds = (performance.now() - started) / 1000
        if (process.env.MYCELIUM_MODEL_REPORT)
          console.log(
            `model over ${lane.name}: ${i} runs (seeds ${BASE}..${BASE + i - 1}) in ${seconds.toFixed(1)} s\n${JSON.stringify(totals)}\n${JSON.stringify(errors)}`,
          )
        // The runs reached the store's races: effects, replays, crashes, releases.
        if (i >= 4) {
          expect(totals.effects).toBeGreaterThan(i)
          expect(totals.replays).toBeGreaterThan(i / 2)
          expect(totals.crashes).toBeGreaterThan(i / 2)
          expect(totals.releases).toBeGreaterThan(0)
        }
      },
      60_000 + runs * 5_000 + SECONDS * 1_500,
    )
  }
})
