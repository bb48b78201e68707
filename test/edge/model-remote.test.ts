// The ledger's model-based random test (test/core/ledger/model-world.ts) through the edge API's agent routes: every
// worker a RemoteLedger client with its own agent token, the operator on the operator routes, the server on the
// model's clock (test/edge/model-remote.ts), over one memory store and over Redis. A failure names its seed:
//   MYCELIUM_MODEL_STORES=memory MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project node test/edge/model-remote.test.ts
// A soak: MYCELIUM_MODEL_SECONDS (keep running each store that long), MYCELIUM_MODEL_RUNS (runs per store),
// MYCELIUM_MODEL_STEPS (default 60), MYCELIUM_MODEL_SEED (a new base); MYCELIUM_MODEL_REPORT=1 prints the counts and
// the requests by route. The lanes `hostile` (memory) and `hostile-redis` add hostile agents of the model's tenant
// and of another (model-intruder.ts); their report adds the hostile requests by kind and answer.
// The memory-clock lane lets time pass inside the server's store calls and gives each worker's
// client a clock minutes to hours off the server's (ModelOptions); MYCELIUM_MODEL_STORES=memory-clock soaks it alone.
import { afterAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { dropKeys, REDIS_URL, runTag } from "../adapters/servers/env.ts"
import { expectRaces, ledgerCounts, soakPlan } from "../core/ledger/model-soak.ts"
import { type ModelStoreFactory, memoryStore, storeClients } from "../core/ledger/model-store.ts"
import { type ModelOptions, ModelWorld } from "../core/ledger/model-world.ts"
import { ModelTally, modelKnobs, runSeeds } from "../core/model-kit.ts"
import type { IntruderTally } from "./model-intruder.ts"
import { edgeWorkers, type RequestTally } from "./model-remote.ts"

// Fixed, so every run of the suite repeats the same schedules; a soak explores new ones with a base of its own.
const knobs = modelKnobs(process.env, 45_200)
const TAG = runTag("model-remote")

// A soak leaves 10^5 keys.
afterAll(() => dropKeys(`mycelium-test:${TAG}:*`))

/** The app's client and the checker's: two connections to one namespace (a lane's own), each closed with the run. */
const redis =
  (lane: string) =>
  (run: number): ModelStoreFactory =>
  () =>
    storeClients(
      () => new RedisLedgerStorage({ url: REDIS_URL, prefix: `mycelium-test:${TAG}:${lane}${run}:` }),
      true,
    )

interface Lane {
  readonly name: string
  /** Runs by default: a few seconds each. */
  readonly runs: number
  store(run: number): ModelStoreFactory
  /** Hostile agents of the model's tenant and of another act beside the honest workers (model-intruder.ts). */
  readonly hostile?: boolean
  readonly options?: ModelOptions
}

const LANES: Lane[] = [
  { name: "memory", runs: 60, store: () => memoryStore },
  { name: "redis", runs: 8, store: redis("r") },
  { name: "hostile", runs: 16, store: () => memoryStore, hostile: true },
  { name: "hostile-redis", runs: 4, store: redis("h"), hostile: true },
  {
    name: "memory-clock",
    runs: 30,
    store: () => memoryStore,
    options: { midCall: true, skew: "minutes-hours" },
  },
]

/** What every hostile lane must have sent and been answered (a pattern of its tally's keys). */
const HOSTILE_KINDS = [
  /^exact 200 replay$/,
  /^exact 200 poll$/,
  /^other binding .* 200 (replay|poll)$/,
  /^other binding .* 200 blocked ledger_hard_block$/,
  /^drifted 409 args_drift$/,
  /^ticket .* (409 args_drift|200 run)$/,
  /^forged .* 409 ledger_outcome_already_set$/,
  /^forged renew .* 409 ledger_lease_expired$/,
  /^forged \w+ 404 ledger_unknown_request$/,
  /^beside\/\w+ 409 /,
  /^trudy beside 404 ledger_unknown_request$/,
  /^trudy \w+ 404 ledger_unknown_request$/,
  /^trudy begin 200 run$/,
  /^malformed .* 4\d\d /,
  /^bad id /,
  /^(trudy )?scope .* 403 forbidden$/,
  /^own begin 200 run$/,
  /^own \w+ after the end 409 ledger_outcome_already_set$/,
  /^own \w+ at fence \d+ 409 /,
  /^own replay 200 replay$/,
  /^own race \w+ 409 ledger_outcome_already_set$/,
]
const hostileCount = (t: IntruderTally, kind: RegExp): number =>
  Object.entries(t).reduce((n, [k, v]) => n + (kind.test(k) ? v : 0), 0)

/** The hostile requests: their total, then each kind and answer, most first. */
const hostileReport = (t: IntruderTally): string => {
  const rows = Object.entries(t).sort(([, a], [, b]) => b - a)
  return `hostile requests: ${rows.reduce((n, [, v]) => n + v, 0)}\n${rows.map(([k, v]) => `  ${v} ${k}`).join("\n")}`
}

describe("RemoteLedger workers through the edge API's agent routes, against the reference model", () => {
  for (const lane of LANES) {
    if (!knobs.picks(lane.name)) continue
    const plan = soakPlan(lane.runs, knobs.base, knobs)
    it(
      `${lane.name}: ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}${plan.seconds ? `, or more for ${plan.seconds} s` : ""}`,
      async () => {
        const tally = new ModelTally(ledgerCounts(true, lane.options?.midCall))
        const requests: RequestTally = {}
        const hostile: IntruderTally | undefined = lane.hostile ? {} : undefined
        const { runs, seconds } = await runSeeds(
          plan,
          async (seed, i) => {
            const world = new ModelWorld(
              seed,
              lane.store(i),
              (setup) => edgeWorkers(setup, requests, hostile),
              lane.options,
            )
            await world.run(plan.steps)
            tally.add(world.stats)
          },
          (seed) => `edge ${lane.name}, seed ${seed}: ${knobs.repeat(lane.name, seed)}`,
        )
        if (knobs.report)
          console.log(
            `model over the edge API, ${lane.name}: ${runs} runs (seeds ${plan.base}..${plan.base + runs - 1}) in ${seconds.toFixed(1)} s\n` +
              `${tally.json}\n${JSON.stringify(requests)}` +
              (hostile ? `\n${hostileReport(hostile)}` : ""),
          )
        // The runs reached what the agent routes are for: effects, replays, polls, crashes, refused late owners,
        // operator verdicts that licensed re-runs, renewals refused on a lapsed lease.
        if (runs >= 8) {
          expectRaces(tally.totals, runs)
          expect(tally.totals.verdictReruns).toBeGreaterThan(0)
          expect(tally.errors.LedgerOutcomeAlreadySetError).toBeGreaterThan(0)
          expect(requests["POST calls poll"]).toBeGreaterThan(0)
          expect(requests["POST renew 409"]).toBeGreaterThan(0)
        }
        // The hostile agents reached what they are for: every kind of request, refused or answered as documented.
        if (hostile && runs >= 4)
          for (const kind of HOSTILE_KINDS)
            expect(hostileCount(hostile, kind), String(kind)).toBeGreaterThan(0)
        if (runs >= 8 && lane.options?.midCall) expect(tally.totals.lapsesMidCall).toBeGreaterThan(runs)
      },
      plan.timeout(400),
    )
  }

  it("a seed repeats its run step for step", async () => {
    const seed = (knobs.base + 7919) >>> 0
    const traces = []
    for (let i = 0; i < 2; i++) {
      const world = new ModelWorld(seed, memoryStore, edgeWorkers)
      await world.run(knobs.steps)
      traces.push(world.trace)
    }
    expect(traces[1]).toEqual(traces[0])
  })
})
