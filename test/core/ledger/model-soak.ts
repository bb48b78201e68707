// The model test (model-world.ts) over a store that runs only in its own runtime: workerd's Durable Objects
// (test/workers/model-durable-object.test.ts), Chromium's IndexedDB (test/browser/model-indexeddb.test.ts). Neither
// runtime has the host's process.env; Vite hands a test the host's VITE_-prefixed variables as import.meta.env:
//   VITE_MYCELIUM_MODEL_RUNS (runs per store), VITE_MYCELIUM_MODEL_SECONDS (keep running each store that long),
//   VITE_MYCELIUM_MODEL_STEPS (default 60), VITE_MYCELIUM_MODEL_SEED (a new base), VITE_MYCELIUM_MODEL_REPORT=1,
//   VITE_MYCELIUM_MODEL_STORES (a file's store names, comma-separated: which of them run).
import { expect } from "vitest"
import type { ModelStoreFactory } from "./model-store.ts"
import { type ModelStats, ModelWorld } from "./model-world.ts"

const vars = (import.meta as ImportMeta & { env?: Record<string, string | undefined> }).env ?? {}

const knob = (name: string, fallback: number): number => {
  const v = vars[`VITE_MYCELIUM_MODEL_${name}`]
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`VITE_MYCELIUM_MODEL_${name} must be a whole number >= 0, got '${v}'`)
  return n
}

export interface SoakPlan {
  /** Runs per store: the knob, else the file's default. */
  readonly runs: number
  /** Keep running a store at least this long (0: just `runs`). */
  readonly seconds: number
  readonly steps: number
  readonly base: number
  /** Whether the store named `name` runs (VITE_MYCELIUM_MODEL_STORES picks some; by default all do). */
  picks(name: string): boolean
  /** The vitest timeout a store's test needs, in ms, given its runs' typical cost. */
  timeout(msPerRun: number): number
}

/** The plan for a file whose default is `runs` runs from seed `base`, with the knobs applied. */
export function soakPlan(runs: number, base: number): SoakPlan {
  const plan = {
    runs: knob("RUNS", runs),
    seconds: knob("SECONDS", 0),
    steps: knob("STEPS", 60),
    base: knob("SEED", base),
  }
  const only = vars.VITE_MYCELIUM_MODEL_STORES?.split(",").map((s) => s.trim())
  return {
    ...plan,
    picks: (name) => !only || only.includes(name),
    timeout: (ms) => 60_000 + plan.runs * ms * 5 + plan.seconds * 1_500,
  }
}

type Totals = Omit<ModelStats, "errors" | "maxPending" | "deathMarks">

/**
 * Runs `plan` over one store (`open(run)` makes run `run`'s store, fresh each time) and checks that the runs reached
 * the store's races. A failure names the store, the seed and the knobs that repeat it.
 */
export async function soakStore(
  name: string,
  plan: SoakPlan,
  open: (run: number) => ModelStoreFactory,
): Promise<void> {
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
  for (; i < plan.runs || performance.now() - started < plan.seconds * 1000; i++) {
    const seed = (plan.base + i) >>> 0
    const world = new ModelWorld(seed, open(i))
    try {
      await world.run(plan.steps)
    } catch (e) {
      const text = e instanceof Error ? (e.stack ?? e.message) : String(e)
      throw new Error(
        `${name}, seed ${seed}: VITE_MYCELIUM_MODEL_STORES=${name} VITE_MYCELIUM_MODEL_SEED=${seed} VITE_MYCELIUM_MODEL_RUNS=1\n${text}`,
      )
    }
    for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += world.stats[k]
    for (const [e, n] of Object.entries(world.stats.errors)) errors[e] = (errors[e] ?? 0) + n
  }
  const seconds = (performance.now() - started) / 1000
  if (vars.VITE_MYCELIUM_MODEL_REPORT)
    console.log(
      `model over ${name}: ${i} runs (seeds ${plan.base}..${plan.base + i - 1}) in ${seconds.toFixed(1)} s\n` +
        `${JSON.stringify(totals)}\n${JSON.stringify(errors)}`,
    )
  if (i >= 4) {
    expect(totals.effects).toBeGreaterThan(i)
    expect(totals.replays).toBeGreaterThan(i / 2)
    expect(totals.crashes).toBeGreaterThan(i / 2)
    expect(totals.releases).toBeGreaterThan(0)
  }
}
