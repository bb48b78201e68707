// The store a model run drives (model-world.ts): memory by default, or a real one (test/adapters/servers/
// model-stores.test.ts). Each worker and the checker get a client of their own, and every client counts its calls in
// flight, so a step can wait for the store to answer: the scheduler moves time only between steps, as on memory,
// while the calls one step sets off (wakers racing to claim, a renewal beside a boundary write) still overlap.
import { type LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"
import type { SchedulerClock } from "./model-clock.ts"

/** One run's store: `client()` is a new connection to it (memory hands out the same object). */
export interface ModelStore {
  client(): LedgerStorage
  close?(): Promise<void>
  /** The checker reads each known id after a step instead of listing (a list of a shared Redis scans all of it). */
  readonly byId?: boolean
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
