import { secondsProblem } from "../seconds.ts"
import { ContextGuardConfigError } from "./errors.ts"

/** Seconds from an arbitrary origin; only differences matter. */
export type SecondsClock = () => number

const monotonicSeconds: SecondsClock = () => performance.now() / 1000

/** A load in progress: its promise, and when it began on `clock`, that of the call that began it. */
interface Flight {
  run?: Promise<unknown>
  at: number
  clock: SecondsClock
}

interface Entry {
  value: unknown
  /** When it was stored, on `clock`, and for how long it stays fresh. */
  at: number
  ttl: number
  /** The clock `at` is on (a protected tool may bring its own). */
  clock: SecondsClock
}

// Sweeps run when the map has doubled since the last one, so their cost is amortized over the inserts.
const FIRST_SWEEP_AT = 1024

/** Options for {@link ToolCache}. */
export interface ToolCacheOptions {
  /** Clock in seconds; defaults to `performance.now() / 1000` (monotonic, available in every runtime). */
  clock?: SecondsClock
}

/**
 * A TTL cache with single-flight loading. Entries are stored in a wrapper, so `null` and `undefined`
 * results are cached like any other value (the original treated a cached `None` as a miss).
 */
export class ToolCache {
  readonly #entries = new Map<string, Entry>()
  readonly #inflight = new Map<string, Flight>()
  readonly #clock: SecondsClock
  #sweepAt = FIRST_SWEEP_AT

  constructor(options: ToolCacheOptions = {}) {
    this.#clock = assertClock(options.clock) ?? monotonicSeconds
  }

  /** Number of live (unexpired) entries. */
  get size(): number {
    let n = 0
    for (const e of this.#entries.values()) if (within(e, e.ttl)) n++
    return n
  }

  has(key: string): boolean {
    return this.#lookup(key) !== undefined
  }

  /**
   * Drops the entry and forgets a load in progress for it: that load's callers still get its value, but it is not
   * stored and later calls do not join it (it may have read the data before the change that led to this call).
   */
  delete(key: string): void {
    this.#entries.delete(key)
    this.#inflight.delete(key)
  }

  clear(): void {
    this.#entries.clear()
    this.#inflight.clear()
  }

  /**
   * Returns the cached value for `key`, or runs `load` once for all concurrent callers. A failing load
   * removes the key (no stale value survives an error) and rejects every waiter with the same error.
   */
  async getOrLoad<T>(key: string, ttl: number, load: () => Promise<T> | T, clock?: SecondsClock): Promise<T> {
    assertTtl(ttl)
    const hit = this.#lookup(key)
    if (hit) return hit.value as T
    const now = clock ?? this.#clock
    const pending = this.#inflight.get(key)
    // A load older than the ttl is not joined: an upstream call that hangs holds its key for at most ttl, and
    // only the newest load writes the key.
    if (pending && within(pending, ttl, true)) {
      // A tick first: a load that asks for its own key before its first await finds its flight before the promise
      // is made (it got undefined). load itself must run at once, inside the caller's session (see Session.run).
      await pending
      return pending.run as Promise<T>
    }
    // Registered before `load` runs: a load that throws at once must clear its own flight, not leave a rejected
    // promise that every later caller would get without a call.
    const flight: Flight = { at: now(), clock: now }
    this.#inflight.set(key, flight)
    const mine = () => this.#inflight.get(key) === flight
    flight.run = (async () => {
      try {
        const value = await load()
        if (mine()) this.#entries.set(key, { value, at: now(), ttl, clock: now })
        if (this.#entries.size >= this.#sweepAt) this.#sweep()
        return value
      } catch (error) {
        if (mine()) this.#entries.delete(key)
        throw error
      } finally {
        if (mine()) this.#inflight.delete(key)
      }
    })()
    // Each caller gets (and must handle) this method's own promise; a load that threw at once is already rejected
    // before the return adopts it, which workerd reports as unhandled.
    flight.run.catch(() => {})
    return flight.run as Promise<T>
  }

  // An expired entry used to leave only when its own key was asked for again: a model cycling through ids grew
  // the cache (the process-wide default one included) without bound.
  #sweep(): void {
    for (const [key, e] of this.#entries) if (!within(e, e.ttl)) this.#entries.delete(key)
    this.#sweepAt = Math.max(FIRST_SWEEP_AT, 2 * this.#entries.size)
  }

  // On the clock the entry's expiry was computed on: tools sharing a name may bring different clocks.
  #lookup(key: string): Entry | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (within(entry, entry.ttl)) return entry
    this.#entries.delete(key)
    return undefined
  }
}

// Younger than `ttl` (or as old, for a load to join), on the clock `at` was read on. A clock may step back (a wall
// clock, `Date.now() / 1000` as assertClock's message suggests, after an NTP correction): read by its expiry alone, an
// entry stored before a step back of an hour stayed fresh for the hour and the ttl, and a hung load was joined as
// long. Begun "later" than now, its age is unknown: stale.
function within(e: { at: number; clock: SecondsClock }, ttl: number, joinAtTtl?: boolean): boolean {
  const age = e.clock() - e.at
  return age >= 0 && (joinAtTtl ? age <= ttl : age < ttl)
}

export function assertTtl(ttl: number): void {
  const problem = secondsProblem("ttl", ttl, 0)
  if (problem) throw new ContextGuardConfigError(`${problem}. Pass e.g. { ttl: 60 }.`)
}

// A clock that is not a function failed each call with a bare TypeError ("now is not a function"), not when built.
export function assertClock(clock: SecondsClock | undefined): SecondsClock | undefined {
  if (clock !== undefined && typeof clock !== "function")
    throw new ContextGuardConfigError(
      "clock must be a function returning seconds, e.g. { clock: () => Date.now() / 1000 }",
    )
  return clock
}
