// The ledger's model-based random test (test/core/ledger/model-world.ts) through the edge API's agent routes: every
// worker a RemoteLedger client with its own agent token, the operator on the operator routes, the server on the
// model's clock (test/edge/model-remote.ts), over one memory store and over Redis. A failure names its seed:
//   MYCELIUM_MODEL_STORES=memory MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project node test/edge/model-remote.test.ts
// A soak: MYCELIUM_MODEL_SECONDS (keep running each store that long), MYCELIUM_MODEL_RUNS (runs per store),
// MYCELIUM_MODEL_STEPS (default 60), MYCELIUM_MODEL_SEED (a new base); MYCELIUM_MODEL_REPORT=1 prints the counts and
// the requests by route.
import { afterAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage, RespConnection } from "../../src/adapters/redis.ts"
import { runTag } from "../adapters/servers/env.ts"
import type { ModelStore, ModelStoreFactory } from "../core/ledger/model-store.ts"
import { memoryStore } from "../core/ledger/model-store.ts"
import { type ModelStats, ModelWorld } from "../core/ledger/model-world.ts"
import { edgeWorkers, type RequestTally } from "./model-remote.ts"

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
// Fixed, so every run of the suite repeats the same schedules; a soak explores new ones with a base of its own.
const BASE = env("MYCELIUM_MODEL_SEED", 45_200)
const ONLY = process.env.MYCELIUM_MODEL_STORES?.split(",").map((s) => s.trim())
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const TAG = runTag("model-remote")

afterAll(async () => {
  // A soak leaves 10^5 keys.
  const conn = new RespConnection(REDIS_URL)
  try {
    let cursor = "0"
    do {
      const [next, keys] = (await conn.command(
        "SCAN",
        cursor,
        "MATCH",
        `mycelium-test:${TAG}:*`,
        "COUNT",
        1000,
      )) as [string, string[]]
      if (keys.length) await conn.command("DEL", ...keys)
      cursor = next
    } while (cursor !== "0")
  } finally {
    conn.close()
  }
})

/** The app's client and the checker's: two connections to one namespace, each closed with the run. */
const redis =
  (run: number): ModelStoreFactory =>
  () => {
    const made: RedisLedgerStorage[] = []
    const store: ModelStore = {
      byId: true,
      client() {
        const s = new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${TAG}:r${run}:` })
        made.push(s)
        return s
      },
      async close() {
        for (const s of made) await s.close()
      },
    }
    return store
  }

interface Lane {
  readonly name: string
  /** Runs by default: a few seconds each. */
  readonly runs: number
  store(run: number): ModelStoreFactory
}

const LANES: Lane[] = [
  { name: "memory", runs: 60, store: () => memoryStore },
  { name: "redis", runs: 8, store: redis },
]

type Totals = Omit<ModelStats, "errors" | "maxPending">

describe("RemoteLedger workers through the edge API's agent routes, against the reference model", () => {
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
          deathMarks: 0,
          verdictReruns: 0,
        }
        const errors: Record<string, number> = {}
        const requests: RequestTally = {}
        const started = performance.now()
        let i = 0
        for (; i < runs || performance.now() - started < SECONDS * 1000; i++) {
          const seed = (BASE + i) >>> 0
          const world = new ModelWorld(seed, lane.store(i), (setup) => edgeWorkers(setup, requests))
          try {
            await world.run(STEPS)
          } catch (e) {
            const text = e instanceof Error ? (e.stack ?? e.message) : String(e)
            throw new Error(
              `edge ${lane.name}, seed ${seed}: MYCELIUM_MODEL_STORES=${lane.name} MYCELIUM_MODEL_SEED=${seed} MYCELIUM_MODEL_RUNS=1\n${text}`,
            )
          }
          for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += world.stats[k]
          for (const [name, n] of Object.entries(world.stats.errors)) errors[name] = (errors[name] ?? 0) + n
        }
        const seconds = (performance.now() - started) / 1000
        if (process.env.MYCELIUM_MODEL_REPORT)
          console.log(
            `model over the edge API, ${lane.name}: ${i} runs (seeds ${BASE}..${BASE + i - 1}) in ${seconds.toFixed(1)} s\n` +
              `${JSON.stringify(totals)}\n${JSON.stringify(errors)}\n${JSON.stringify(requests)}`,
          )
        // The runs reached what the agent routes are for: effects, replays, polls, crashes, refused late owners,
        // operator verdicts that licensed re-runs, renewals refused on a lapsed lease.
        if (i >= 8) {
          expect(totals.effects).toBeGreaterThan(i)
          expect(totals.replays).toBeGreaterThan(i / 2)
          expect(totals.crashes).toBeGreaterThan(i / 2)
          expect(totals.releases).toBeGreaterThan(0)
          expect(totals.verdictReruns).toBeGreaterThan(0)
          expect(errors.LedgerOutcomeAlreadySetError).toBeGreaterThan(0)
          expect(requests["POST calls poll"]).toBeGreaterThan(0)
          expect(requests["POST renew 409"]).toBeGreaterThan(0)
        }
      },
      60_000 + runs * 2_000 + SECONDS * 1_500,
    )
  }

  it("a seed repeats its run step for step", async () => {
    const seed = (BASE + 7919) >>> 0
    const traces = []
    for (let i = 0; i < 2; i++) {
      const world = new ModelWorld(seed, memoryStore, edgeWorkers)
      await world.run(STEPS)
      traces.push(world.trace)
    }
    expect(traces[1]).toEqual(traces[0])
  })
})
