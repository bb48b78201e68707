// A model-based, seeded random test of the exactly-once promise: random interleavings of calls, redispatches, drift,
// stalls, crashes, lease lapses, operator verdicts and a reconciler across several workers on one store, checked
// against a reference model after every step (model-world.ts). A failure prints its seed:
//   MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 npx vitest run --project node test/core/ledger/model-random.test.ts
// MYCELIUM_MODEL_RUNS=20000 soaks; MYCELIUM_MODEL_STEPS sets the steps per run.
// The second lane lets time pass inside the workers' store calls (model-store.ts, MidCallTime), with knobs of its own:
//   MYCELIUM_MODEL_MIDCALL_RUNS, _SECONDS, _STEPS, _SEED, _REPORT (e.g. MYCELIUM_MODEL_MIDCALL_SECONDS=600 soaks).
import { describe, expect, it } from "vitest"
import { ModelTally, modelKnobs, runSeeds } from "../model-kit.ts"
import { expectRaces, ledgerCounts } from "./model-soak.ts"
import { ModelWorld } from "./model-world.ts"

// A fixed base seed, so every run of the suite (and CI) repeats the same interleavings; a soak explores new ones with
// a seed of its own (MYCELIUM_MODEL_SEED=$RANDOM MYCELIUM_MODEL_RUNS=20000). A failure names the run's own seed.
const knobs = modelKnobs(process.env, 45_000)
const RUNS = knobs.runs ?? 300
const { steps: STEPS, base: BASE } = knobs

describe("action ledger against a reference model (seeded random interleavings)", () => {
  it(
    `${RUNS} runs of ${STEPS} steps from seed ${BASE}: no double effect, no lost result, no stranded row`,
    async () => {
      const tally = new ModelTally(ledgerCounts())
      const { seconds } = await runSeeds({ runs: RUNS, seconds: 0, base: BASE }, async (seed) => {
        const world = new ModelWorld(seed)
        await world.run(STEPS)
        tally.add(world.stats)
      })
      if (knobs.report)
        console.log(
          `model: ${RUNS} runs in ${seconds.toFixed(2)} s (${(RUNS / seconds).toFixed(0)} runs/s, ` +
            `${(tally.totals.steps / seconds).toFixed(0)} steps/s); max ${tally.maxPending} calls in flight at once\n` +
            tally.json,
        )
      // The runs explored what they are for: effects, replays, crashes, operator verdicts that licensed re-runs.
      if (RUNS >= 100) {
        expectRaces(tally.totals, RUNS)
        expect(tally.totals.verdictReruns).toBeGreaterThan(0)
        expect(tally.maxPending).toBeGreaterThan(3)
      }
      // A soak's time grows with its runs (about 7 ms each here).
    },
    30_000 + RUNS * 30,
  )

  it("a seed repeats its run step for step", async () => {
    const seed = (BASE + 7919) >>> 0
    const traces = []
    for (let i = 0; i < 2; i++) {
      const world = new ModelWorld(seed)
      await world.run(STEPS)
      traces.push(world.trace)
    }
    expect(traces[1]).toEqual(traces[0])
  })
})

// Fixed too; its own base, so its runs are not the first lane's with time added.
const midKnobs = modelKnobs(process.env, 46_000, "MYCELIUM_MODEL_MIDCALL_")
const MID_RUNS = midKnobs.runs ?? 150

describe("the same model with time passing inside store calls", () => {
  it(
    `${MID_RUNS} runs of ${midKnobs.steps} steps from seed ${midKnobs.base}${midKnobs.seconds ? `, or more for ${midKnobs.seconds} s` : ""}: a lease that lapses mid-call starts no effect`,
    async () => {
      const tally = new ModelTally(ledgerCounts(false, true))
      const plan = { runs: MID_RUNS, seconds: midKnobs.seconds, base: midKnobs.base }
      const { runs, seconds } = await runSeeds(plan, async (seed) => {
        const world = new ModelWorld(seed, undefined, undefined, { midCall: true })
        await world.run(midKnobs.steps)
        tally.add(world.stats)
      })
      if (midKnobs.report)
        console.log(`model, time inside store calls: ${runs} runs in ${seconds.toFixed(2)} s\n${tally.json}`)
      if (runs >= 100) {
        expectRaces(tally.totals, runs)
        // Leases lapsed inside calls, and some of those lapses reached a boundary write: refused, never an effect.
        expect(tally.totals.lapsesMidCall).toBeGreaterThan(runs)
        expect(tally.errors.LedgerLeaseError).toBeGreaterThan(0)
      }
    },
    30_000 + MID_RUNS * 30 + midKnobs.seconds * 1_500,
  )

  it("a seed repeats its run step for step", async () => {
    const seed = (midKnobs.base + 7919) >>> 0
    const traces = []
    for (let i = 0; i < 2; i++) {
      const world = new ModelWorld(seed, undefined, undefined, { midCall: true })
      await world.run(midKnobs.steps)
      traces.push(world.trace)
    }
    expect(traces[1]).toEqual(traces[0])
    expect(traces[0]?.some((l) => l.includes(" before ") || l.includes(" after "))).toBe(true)
  })
})
