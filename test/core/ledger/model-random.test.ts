// A model-based, seeded random test of the exactly-once promise: random interleavings of calls, redispatches, drift,
// stalls, crashes, lease lapses, operator verdicts and a reconciler across several workers on one store, checked
// against a reference model after every step (model-world.ts). A failure prints its seed:
//   MYCELIUM_MODEL_SEED=<seed> MYCELIUM_MODEL_RUNS=1 npx vitest run --project node test/core/ledger/model-random.test.ts
// MYCELIUM_MODEL_RUNS=20000 soaks; MYCELIUM_MODEL_STEPS sets the steps per run.
import { describe, expect, it } from "vitest"
import { ModelWorld } from "./model-world.ts"

const env = (name: string, fallback: number): number => {
  const v = process.env[name]
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number >= 0, got '${v}'`)
  return n
}

const RUNS = env("MYCELIUM_MODEL_RUNS", 300)
const STEPS = env("MYCELIUM_MODEL_STEPS", 60)
// A fixed base seed, so every run of the suite (and CI) repeats the same interleavings; a soak explores new ones with
// a seed of its own (MYCELIUM_MODEL_SEED=$RANDOM MYCELIUM_MODEL_RUNS=20000). A failure names the run's own seed.
const BASE = env("MYCELIUM_MODEL_SEED", 45_000)

describe("action ledger against a reference model (seeded random interleavings)", () => {
  it(
    `${RUNS} runs of ${STEPS} steps from seed ${BASE}: no double effect, no lost result, no stranded row`,
    async () => {
      const totals = {
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
      let maxPending = 0
      const started = performance.now()
      for (let i = 0; i < RUNS; i++) {
        const world = new ModelWorld((BASE + i) >>> 0)
        await world.run(STEPS)
        for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += world.stats[k]
        for (const [name, n] of Object.entries(world.stats.errors)) errors[name] = (errors[name] ?? 0) + n
        maxPending = Math.max(maxPending, world.stats.maxPending)
      }
      const seconds = (performance.now() - started) / 1000
      if (process.env.MYCELIUM_MODEL_REPORT)
        console.log(
          `model: ${RUNS} runs in ${seconds.toFixed(2)} s (${(RUNS / seconds).toFixed(0)} runs/s, ` +
            `${(totals.steps / seconds).toFixed(0)} steps/s); max ${maxPending} calls in flight at once\n` +
            `${JSON.stringify(totals)}\n${JSON.stringify(errors)}`,
        )
      // The runs explored what they are for: effects, replays, crashes, operator verdicts that licensed re-runs.
      if (RUNS >= 100) {
        expect(totals.effects).toBeGreaterThan(RUNS)
        expect(totals.replays).toBeGreaterThan(RUNS / 2)
        expect(totals.crashes).toBeGreaterThan(RUNS / 2)
        expect(totals.releases).toBeGreaterThan(0)
        expect(totals.verdictReruns).toBeGreaterThan(0)
        expect(maxPending).toBeGreaterThan(3)
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
