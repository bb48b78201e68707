// The store a model run drives (model-world.ts): memory by default, or a real one (test/adapters/servers/
// model-stores.test.ts). Each worker and the checker get a client of their own, and every client counts its calls in
// flight, so a step can wait for the store to answer: the scheduler moves time only between steps, as on memory,
// while the calls one step sets off (wakers racing to claim, a renewal beside a boundary write) still overlap.
import { seededRandom } from "../../../src/conformance/random.ts"
import { type LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { pickOne, shuffled } from "../model-kit.ts"
import type { SchedulerClock } from "./model-clock.ts"

/** One run's store: `client()` is a new connection to it (memory hands out the same object). */
export interface ModelStore {
  client(): LedgerStorage
  close?(): Promise<void>
  /** The checker reads each known id after a step instead of listing (a list of a shared Redis scans all of it). */
  readonly byId?: boolean
  /**
   * A server stamps the leases on its own clock (the edge API): a holder's row keeps its own stamps of a renewal or
   * a re-run, taken before the request (and the time that passed in it), so the lease is what the stored row says.
   */
  readonly serverLeases?: boolean
}

export type ModelStoreFactory = (clock: SchedulerClock) => ModelStore

export const memoryStore: ModelStoreFactory = () => {
  const store = new MemoryLedgerStorage()
  return { client: () => store }
}

/**
 * Clients of one store that share nothing but the store; each closes with the run. `byId` where a list() scans a
 * shared Redis keyspace (slow); a Neon list is one SELECT, cheaper than a read per id.
 */
export function storeClients(make: () => LedgerStorage, byId = false): ModelStore {
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

// A turn of the event loop: setImmediate where there is one (Node; workerd under nodejs_compat), else a message task
// (Chromium), which, unlike a nested setTimeout(0), is not clamped to 4 ms.
const host = globalThis as { setImmediate?: (f: () => void) => unknown }
const nextTick = (): Promise<void> =>
  new Promise((r) => {
    if (host.setImmediate) return void host.setImmediate(r)
    const { port1, port2 } = new MessageChannel()
    port1.onmessage = () => {
      port1.close()
      r()
    }
    port2.postMessage(null)
  })

/** Counts the calls in flight on the clients it wraps. */
export class InFlight {
  #calls = new Set<Promise<unknown>>()

  /** Counts `p` in flight until it settles (a request to the edge app: model-remote.ts). */
  track<T>(p: Promise<T>): Promise<T> {
    this.#calls.add(p)
    const done = () => this.#calls.delete(p)
    p.then(done, done)
    return p
  }

  wrap(s: LedgerStorage): LedgerStorage {
    const wrapped: LedgerStorage = {
      ...(s.limits ? { limits: s.limits } : {}),
      get: (id) => this.track(s.get(id)),
      set: (e) => this.track(s.set(e)),
      tryClaimInflight: (e, ttl, now, o) => this.track(s.tryClaimInflight(e, ttl, now, o)),
      tryTransition: (next, expect) => this.track(s.tryTransition(next, expect)),
      list: (o) => s.list(o),
    }
    // Only where the store has one: it turns on the ledger's cross-row drift gate.
    const find = s.findByDispatchId?.bind(s)
    if (find) wrapped.findByDispatchId = (d) => this.track(find(d))
    return wrapped
  }

  /** One turn of the event loop, then more until no call is in flight and what their answers started has run. */
  async quiet(): Promise<void> {
    await nextTick()
    for (let turns = 0; this.#calls.size; turns++) {
      if (turns > 10_000) throw new Error(`the store never went quiet: ${this.#calls.size} calls in flight`)
      await Promise.allSettled([...this.#calls])
      await nextTick()
    }
  }
}

/** Where in a store call time passes: before the store acts (the caller's `now` is stale by then), or after it acted. */
export type CallPhase = "before" | "after"

export interface MidCallPlan {
  /** The chance that time passes at each phase of a call. */
  readonly chance: number
  /** The amounts (seconds) time moves by: one is picked, then scaled by 0.8-1.25. */
  readonly amounts: readonly number[]
  /** Told of every move, after the sleepers it woke were woken. */
  readonly moved: (from: number, to: number, what: string) => void
}

/**
 * Time that passes while a worker's store call is in progress: before the store acts (the lease it checks, the
 * `now` it stamps, were read by the caller before time moved) or after it acted, before the caller sees the answer
 * (a GC pause, a slow network). Draws from a generator of its own, so a run without it repeats the same steps.
 */
export class MidCallTime {
  readonly #rand: () => number
  /** Off for the end of a run (the operator's pass and the drive): those check the state the run left. */
  on = true
  /** Request id → the time the last boundary write leaving not_crossed was answered (after time passed in it). */
  readonly boundaryAnswered = new Map<string, number>()

  constructor(
    readonly clock: SchedulerClock,
    seed: number,
    readonly plan: MidCallPlan,
  ) {
    this.#rand = seededRandom(seed ^ 0x5bd1e995)
  }

  #maybe(op: string, phase: CallPhase): void {
    if (!this.on || this.#rand() >= this.plan.chance) return
    const dt = pickOne(this.#rand, this.plan.amounts) * (0.8 + this.#rand() * 0.45)
    const from = this.clock.now()
    const woke = this.clock.advance(dt, (xs) => shuffled(this.#rand, xs))
    this.plan.moved(from, this.clock.now(), `clock +${dt.toFixed(1)}s ${phase} ${op} (woke ${woke})`)
  }

  #around<T>(op: string, act: () => Promise<T>): Promise<T> {
    this.#maybe(op, "before")
    const p = act()
    const after = () => this.#maybe(op, "after")
    return p.finally(after)
  }

  /** `s`, its get, claim, compare-and-set and set with time passing around the store's act. */
  wrap(s: LedgerStorage): LedgerStorage {
    const wrapped: LedgerStorage = {
      ...(s.limits ? { limits: s.limits } : {}),
      get: (id) => this.#around("get", () => s.get(id)),
      set: (e) => this.#around("set", () => s.set(e)),
      tryClaimInflight: (e, ttl, now, o) => this.#around("claim", () => s.tryClaimInflight(e, ttl, now, o)),
      tryTransition: (next, expect) => {
        const p = this.#around("cas", () => s.tryTransition(next, expect))
        if (expect.sideEffectBoundary !== "not_crossed" || next.sideEffectBoundary === "not_crossed") return p
        const answered = () => void this.boundaryAnswered.set(next.requestId, this.clock.now())
        return p.finally(answered)
      },
      list: (o) => s.list(o),
    }
    const find = s.findByDispatchId?.bind(s)
    if (find) wrapped.findByDispatchId = (d) => find(d)
    return wrapped
  }
}
