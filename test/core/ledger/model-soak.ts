// Runs of the ledger's model test (model-world.ts) over one store, and the checks that the runs reached the store's
// races: over the real stores (test/adapters/servers/model-stores.test.ts, knobs MYCELIUM_MODEL_*), and over a store
// that runs only in its own runtime: workerd's Durable Objects (test/workers/model-durable-object.test.ts), Chromium's
// IndexedDB (test/browser/model-indexeddb.test.ts). Neither runtime has the host's process.env; Vite hands a test the
// host's VITE_-prefixed variables as import.meta.env:
//   VITE_MYCELIUM_MODEL_RUNS (runs per store), VITE_MYCELIUM_MODEL_SECONDS (keep running each store that long),
//   VITE_MYCELIUM_MODEL_STEPS (default 60), VITE_MYCELIUM_MODEL_SEED (a new base), VITE_MYCELIUM_MODEL_REPORT=1,
//   VITE_MYCELIUM_MODEL_STORES (a file's store names, comma-separated: which of them run),
//   VITE_MYCELIUM_MODEL_MIDCALL=1 (time passes inside store calls in every lane, not only the -midcall ones).
import { expect } from "vitest"
import { type ModelKnobs, ModelTally, modelKnobs, runSeeds, type SeedPlan } from "../model-kit.ts"
import type { ModelStoreFactory } from "./model-store.ts"
import { type ModelOptions, type ModelStats, ModelWorld } from "./model-world.ts"

const vars = (import.meta as ImportMeta & { env?: Record<string, string | undefined> }).env ?? {}

type Count = Exclude<keyof ModelStats, "errors" | "maxPending">

/**
 * The counts a report adds up, in ModelStats's order; a death mark only through the edge API counts there, and the
 * clock's moves inside store calls only where they happen (ModelOptions.midCall).
 */
export const ledgerCounts = (deathMarks = false, midCall = false): Count[] => [
  "steps",
  "calls",
  "runs",
  "replays",
  "effects",
  "crashes",
  "releases",
  ...(deathMarks ? (["deathMarks"] as const) : []),
  "verdictReruns",
  ...(midCall ? (["midCallMoves", "lapsesMidCall", "lapsedBeforeEffect"] as const) : []),
]

/** The runs reached what the model is for: effects, replays, crashes, releases. */
export function expectRaces(totals: Readonly<Record<Count, number>>, runs: number): void {
  expect(totals.effects).toBeGreaterThan(runs)
  expect(totals.replays).toBeGreaterThan(runs / 2)
  expect(totals.crashes).toBeGreaterThan(runs / 2)
  expect(totals.releases).toBeGreaterThan(0)
}

export interface SoakPlan extends SeedPlan {
  /** Runs per store: the knob, else the file's default. */
  readonly runs: number
  readonly steps: number
  readonly knobs: ModelKnobs
  /** Whether the store named `name` runs (STORES picks some; by default all do). */
  picks(name: string): boolean
  /** The vitest timeout a store's test needs, in ms, given its runs' typical cost. */
  timeout(msPerRun: number): number
}

/**
 * The plan for a file whose default is `runs` runs from seed `base`, with the knobs applied: the VITE_-prefixed ones
 * unless `knobs` says otherwise.
 */
export function soakPlan(
  runs: number,
  base: number,
  knobs = modelKnobs(vars, base, "VITE_MYCELIUM_MODEL_"),
): SoakPlan {
  const plan = { runs: knobs.runs ?? runs, seconds: knobs.seconds, steps: knobs.steps, base: knobs.base }
  return {
    ...plan,
    knobs,
    picks: knobs.picks,
    timeout: (ms) => 60_000 + plan.runs * ms * 5 + plan.seconds * 1_500,
  }
}

/**
 * Runs `plan` over one store (`open(run)` makes run `run`'s store, fresh each time) and checks that the runs reached
 * the store's races. A failure names the store, the seed and the knobs that repeat it.
 */
export async function soakStore(
  name: string,
  plan: SoakPlan,
  open: (run: number) => ModelStoreFactory | Promise<ModelStoreFactory>,
  options: ModelOptions = {},
): Promise<void> {
  const tally = new ModelTally(ledgerCounts(false, options.midCall))
  const { runs, seconds } = await runSeeds(
    plan,
    async (seed, i) => {
      const world = new ModelWorld(seed, await open(i), undefined, options)
      await world.run(plan.steps)
      tally.add(world.stats)
    },
    (seed) => `${name}, seed ${seed}: ${plan.knobs.repeat(name, seed)}`,
  )
  if (plan.knobs.report)
    console.log(
      `model over ${name}: ${runs} runs (seeds ${plan.base}..${plan.base + runs - 1}) in ${seconds.toFixed(1)} s\n` +
        tally.json,
    )
  if (runs >= 4) expectRaces(tally.totals, runs)
  // Time passing inside store calls lapsed leases there (each run has a few).
  if (runs >= 4 && options.midCall) expect(tally.totals.lapsesMidCall).toBeGreaterThan(runs)
}
