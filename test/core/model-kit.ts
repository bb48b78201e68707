// What the model-based random tests share: the ledger's (test/core/ledger/model-world.ts) and the task ledger's
// (test/core/tasks/model-world.ts) worlds, and every runner of them. Free of Node APIs: the ledger's model also runs
// in workerd and Chromium (test/core/ledger/model-soak.ts).
import { MyceliumError } from "../../src/core/index.ts"

/** Environment variables: Node's process.env, or what Vite hands a test in workerd or Chromium (import.meta.env). */
export type ModelVars = Readonly<Record<string, string | undefined>>

/** The knobs every runner reads: `<prefix>RUNS`, `SECONDS`, `STEPS`, `SEED`, `STORES` and `REPORT`. */
export interface ModelKnobs {
  /** Runs (per store): null where unset, so each file or lane keeps its own default. */
  readonly runs: number | null
  /** Keep running (each store) at least this long; 0: just the runs. */
  readonly seconds: number
  readonly steps: number
  /** The base seed: run i uses base + i. */
  readonly base: number
  /** Prints each run's counts. */
  readonly report: boolean
  /** Whether the store named `name` runs (`<prefix>STORES` picks some, comma-separated; by default all do). */
  picks(name: string): boolean
  /** A whole-number knob of a file's own, e.g. `FILE_RUNS`. */
  whole(name: string, fallback: number): number
  /** An on/off knob of a file's own, e.g. `MIDCALL`: set to anything but empty turns it on. */
  flag(name: string): boolean
  /** The knobs that repeat one run of `store` from `seed`. */
  repeat(store: string, seed: number): string
}

/** The knobs in `vars`; `base` is the file's fixed base seed (CI repeats the same interleavings; a soak picks its own). */
export function modelKnobs(vars: ModelVars, base: number, prefix = "MYCELIUM_MODEL_"): ModelKnobs {
  const whole = <F extends number | null>(name: string, fallback: F): number | F => {
    const v = vars[`${prefix}${name}`]
    if (v === undefined || v === "") return fallback
    const n = Number(v)
    if (!Number.isSafeInteger(n) || n < 0)
      throw new Error(`${prefix}${name} must be a whole number >= 0, got '${v}'`)
    return n
  }
  const only = vars[`${prefix}STORES`]?.split(",").map((s) => s.trim())
  return {
    runs: whole("RUNS", null),
    seconds: whole("SECONDS", 0),
    steps: whole("STEPS", 60),
    base: whole("SEED", base),
    report: Boolean(vars[`${prefix}REPORT`]),
    picks: (name) => !only || only.includes(name),
    whole,
    flag: (name) => Boolean(vars[`${prefix}${name}`]),
    repeat: (store, seed) => `${prefix}STORES=${store} ${prefix}SEED=${seed} ${prefix}RUNS=1`,
  }
}

/** What a world counts in a run: numbers, the errors its calls met by name, the most calls in flight at once. */
export type RunStats<K extends string> = Readonly<Record<K, number>> & {
  readonly errors: Readonly<Record<string, number>>
  readonly maxPending: number
}

/** The counts of many runs added up, in the order of `keys` (the order a report prints them in). */
export class ModelTally<K extends string> {
  readonly totals = {} as Record<K, number>
  readonly errors: Record<string, number> = {}
  maxPending = 0

  constructor(readonly keys: readonly K[]) {
    for (const k of keys) this.totals[k] = 0
  }

  add(stats: RunStats<K>): void {
    for (const k of this.keys) this.totals[k] += stats[k]
    for (const [name, n] of Object.entries(stats.errors)) this.errors[name] = (this.errors[name] ?? 0) + n
    this.maxPending = Math.max(this.maxPending, stats.maxPending)
  }

  /** The totals and the errors, a JSON line each. */
  get json(): string {
    return `${JSON.stringify(this.totals)}\n${JSON.stringify(this.errors)}`
  }
}

export interface SeedPlan {
  readonly runs: number
  /** Keep running at least this long (0: just `runs`). */
  readonly seconds: number
  readonly base: number
}

/**
 * Runs `run(seed, i)` for the seeds `base`, `base + 1`, …: `runs` of them, or more until `seconds` passed. `named`
 * turns a run's failure into one that names its seed (and how to repeat it); without it, the failure as it is.
 */
export async function runSeeds(
  plan: SeedPlan,
  run: (seed: number, i: number) => Promise<void>,
  named?: (seed: number) => string,
): Promise<{ runs: number; seconds: number }> {
  const started = performance.now()
  let i = 0
  for (; i < plan.runs || performance.now() - started < plan.seconds * 1000; i++) {
    const seed = (plan.base + i) >>> 0
    try {
      await run(seed, i)
    } catch (e) {
      if (!named) throw e
      // A store that threw names no seed of its own.
      const text = e instanceof Error ? (e.stack ?? e.message) : String(e)
      throw new Error(`${named(seed)}\n${text}`)
    }
  }
  return { runs: i, seconds: (performance.now() - started) / 1000 }
}

/** One of `xs`, by the run's PRNG. */
export function pickOne<T>(rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)] as T
}

/** `xs` shuffled in place (Fisher-Yates) by the run's PRNG. */
export function shuffled<T>(rand: () => number, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[xs[i], xs[j]] = [xs[j] as T, xs[i] as T]
  }
  return xs
}

const SNAKE = /^[a-z]+(_[a-z]+)*$/

/** What is wrong with an error a call met, or null: every error has one root (MyceliumError) and a snake_case code. */
export function untyped(e: unknown): string | null {
  if (!(e instanceof MyceliumError)) return `untyped error ${String(e)}`
  if (!SNAKE.test(e.code)) return `${e.name} has code '${e.code}', not snake_case`
  return null
}

/**
 * A failed run's report: its first violations, the trace lines that name what a violation names (`named`; `mentions`
 * says whether a line names it), then the last lines, and the knobs that repeat the run.
 */
export function failedRun(
  what: string,
  seed: number,
  run: { readonly violations: readonly string[]; readonly trace: readonly string[] },
  named: ReadonlySet<string>,
  mentions: (line: string, name: string) => boolean,
  aboutLines: number,
): Error {
  const { violations, trace } = run
  const about = trace.filter((l) => [...named].some((n) => mentions(l, n)))
  return new Error(
    `${what} failed (seed ${seed}; repeat with MYCELIUM_MODEL_SEED=${seed} MYCELIUM_MODEL_RUNS=1)\n` +
      `${violations.slice(0, 5).join("\n")}\n-- ${trace[0]}\n-- trace of ${[...named].join(" ")} --\n` +
      `${about.slice(-aboutLines).join("\n")}\n-- trace (last 30) --\n${trace.slice(-30).join("\n")}`,
  )
}

/** A run's trace and the violations its checks found, each line stamped with the step it came in. */
export class RunLog {
  step = 0
  readonly trace: string[] = []
  readonly violations: string[] = []

  log(line: string): void {
    this.trace.push(`[${this.step}] ${line}`)
  }

  violate(what: string): void {
    this.violations.push(`step ${this.step}: ${what}`)
    this.log(`VIOLATION ${what}`)
  }
}

/** Counts an error a call failed with under its name in `errors`; returns the name. */
export function countError(errors: Record<string, number>, error: unknown): string {
  const name = error instanceof Error ? error.name : typeof error
  errors[name] = (errors[name] ?? 0) + 1
  return name
}
