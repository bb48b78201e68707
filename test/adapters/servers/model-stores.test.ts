// The ledger's model-based random test (test/core/ledger/model-world.ts) over the real stores: each worker and the
// checker get a client of their own (a socket, an HTTP client, a file handle, a pool), each run a namespace of its
// own. A failure names its seed and store:
//   MYCELIUM_MODEL_STORES=redis MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project node test/adapters/servers/model-stores.test.ts
// Each store's default runs fit the file in about 25 s. A soak: MYCELIUM_MODEL_SECONDS (keep running each store that
// long), MYCELIUM_MODEL_RUNS (runs per store), MYCELIUM_MODEL_STEPS (default 60), MYCELIUM_MODEL_SEED (a new base);
// MYCELIUM_MODEL_STORES (names, comma-separated) picks stores; MYCELIUM_MODEL_REPORT=1 prints each store's counts.
// MYCELIUM_MODEL_MIDCALL=1 lets time pass inside the workers' store calls in every lane (model-store.ts, MidCallTime);
// the file-midcall lane always does. MYCELIUM_MODEL_SKEW=behind|minutes-hours gives each worker of the http lanes a
// clock that far off the server's (ModelOptions.skew). The server stamps every lease and refuses a write that ends a
// claim it reads as live, or acts on a heartbeat it reads as not yet silent (docs/http-api.md, Store routes): a worker
// ahead, which reads a live row as lapsed by its own clock, polls it instead of blocking or re-running it.
//
// Time: the stores take `now` from the ledger's clock (the model's), except where the store keeps its own:
// - HTTP: the server's clock decides leases and ignores the client's `now`; here the app's clock is the model's
//   clock itself, so server and workers agree exactly unless MYCELIUM_MODEL_SKEW sets the workers' clocks off it.
// - Redis and Upstash: an in-flight key's TTL runs on the server's wall clock. It is at least 4 leases of model time
//   in wall seconds (7 days by default), and a run lasts well under a second of wall time, so no key expires in a
//   run: the tombstone path is not exercised here. Upstash ages rows with the model's clock (`now`); Redis has no
//   such option, which matters only for a row read back from its tombstone.
import { join } from "node:path"
import { neon } from "@neondatabase/serverless"
import { describe, it } from "vitest"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import { HttpLedgerStorage } from "../../../src/adapters/http.ts"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { RedisLedgerStorage } from "../../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import { MemoryLedgerStorage } from "../../../src/core/index.ts"
import { createLedgerApp } from "../../../src/edge/index.ts"
import type { SchedulerClock } from "../../core/ledger/model-clock.ts"
import { soakPlan, soakStore } from "../../core/ledger/model-soak.ts"
import { type ModelStore, type ModelStoreFactory, storeClients } from "../../core/ledger/model-store.ts"
import { modelKnobs } from "../../core/model-kit.ts"
import { DATABASE_URL, dropKeys, REDIS_URL, runTag, upstashClient } from "./env.ts"
import { storeServices } from "./services.ts"

// Fixed, so CI repeats the same schedules (the order in which a real store answers overlapping calls still varies).
const knobs = modelKnobs(process.env, 45_100)
const MIDCALL = Boolean(process.env.MYCELIUM_MODEL_MIDCALL)
const SKEW = process.env.MYCELIUM_MODEL_SKEW
if (SKEW !== undefined && SKEW !== "behind" && SKEW !== "minutes-hours")
  throw new Error(`MYCELIUM_MODEL_SKEW must be behind or minutes-hours, got '${SKEW}'`)
const TAG = runTag("model").replace(/-/g, "_")
const { pool, root, tables, closers } = storeServices("model")
// The keys the Redis and Upstash runs left.
closers.push(() => dropKeys(`mycelium-test:${TAG}:*`))

/** The edge app over `backing`, on the model's clock; each client its own HttpLedgerStorage. */
function overHttp(clock: SchedulerClock, backing: ModelStore): ModelStore {
  const byId = backing.byId === true
  const app = createLedgerApp({ storage: backing.client(), clock: { now: () => clock.now() } })
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch
  return {
    byId,
    serverLeases: true,
    client: () => new HttpLedgerStorage({ url: "http://ledger.local", fetch }),
    close: async () => backing.close?.(),
  }
}

const redis = (ns: string): ModelStore =>
  storeClients(() => new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${ns}:` }), true)

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
  /** Time passes inside store calls (else only with MYCELIUM_MODEL_MIDCALL=1). */
  readonly midCall?: boolean
  /** Runs by default: what fits the store's speed (a list() of Redis scans the shared keyspace; REST is slower). */
  readonly runs: number
  /** Before each run: a fresh namespace (or an emptied table); then the run's store. */
  open(run: number): Promise<ModelStoreFactory>
}

const fileStore = async (run: number, lane: string): Promise<ModelStoreFactory> => {
  const path = join(root, lane, `r${run}`, "ledger.json")
  return () => storeClients(() => new FileLedgerStorage(path, { fsync: false }))
}

const LANES: Lane[] = [
  { name: "file", runs: 12, open: (run) => fileStore(run, "file") },
  { name: "file-midcall", runs: 6, midCall: true, open: (run) => fileStore(run, "file-midcall") },
  { name: "redis", runs: 12, open: async (run) => () => redis(`${TAG}:r${run}:redis`) },
  {
    name: "upstash",
    runs: 4,
    async open(run) {
      const prefix = `mycelium-test:${TAG}:r${run}:up:`
      return (clock) =>
        storeClients(
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
      return () => storeClients(() => new NeonLedgerStorage({ pool, table }))
    },
  },
  {
    name: "neon-http",
    runs: 6,
    async open(run) {
      const table = await neonTable("model_http", run)
      return () => storeClients(() => new NeonLedgerStorage({ sql: neon(DATABASE_URL), table }))
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
    // Time passing inside the HTTP calls found a holder starting its effect on a lease the server had let lapse.
    name: "http-memory-midcall",
    runs: 6,
    midCall: true,
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

describe("action ledger against the reference model, over each real store", () => {
  for (const lane of LANES) {
    if (!knobs.picks(lane.name)) continue
    const plan = soakPlan(lane.runs, knobs.base, knobs)
    it(
      `${lane.name}: ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}${plan.seconds ? `, or more for ${plan.seconds} s` : ""}`,
      () =>
        soakStore(lane.name, plan, lane.open, {
          midCall: MIDCALL || lane.midCall === true,
          // Only where the server's clock decides leases.
          ...(SKEW && lane.name.startsWith("http") ? { skew: SKEW } : {}),
        }),
      plan.timeout(1_000),
    )
  }
})
