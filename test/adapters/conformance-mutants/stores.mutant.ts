// Stores with one contract bug each, for adversarial-conformance.test.ts: the conformance suite must fail every one.
// Each wraps the in-memory store and breaks one method.
import { appendFileSync } from "node:fs"
import { testLedgerStorage, testTaskStore } from "../../../src/conformance.ts"
import { type LedgerStorage, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { MemoryTaskStore, type TaskStore } from "../../../src/tasks.ts"

type M = (base: MemoryLedgerStorage) => LedgerStorage
const wrap =
  (over: (b: MemoryLedgerStorage) => Partial<LedgerStorage>): M =>
  (b) =>
    new Proxy(b, {
      get(t, k) {
        const o = over(t) as Record<string | symbol, unknown>
        if (k in o) return o[k]
        const v = (t as unknown as Record<string | symbol, unknown>)[k]
        return typeof v === "function" ? v.bind(t) : v
      },
    }) as LedgerStorage

const mutants: Record<string, M> = {
  prefixIncludes: wrap((b) => ({
    async *list(o = {}) {
      const { prefix, ...rest } = o
      for await (const e of b.list(rest)) if (!prefix || e.requestId.includes(prefix)) yield e
    },
  })),
  transitionIgnoresOwner: wrap((b) => ({
    tryTransition: (n, e) => b.tryTransition(n, { ...e, owner: undefined }),
  })),
  transitionIgnoresLease: wrap((b) => ({
    tryTransition: (n, e) => b.tryTransition(n, { ...e, leaseHeldAt: undefined }),
  })),
  transitionIgnoresBoundary: wrap((b) => ({
    tryTransition: (n, e) => b.tryTransition(n, { ...e, sideEffectBoundary: undefined }),
  })),
  transitionIgnoresPhase: wrap((b) => ({
    tryTransition: (n, e) => b.tryTransition(n, { ...e, effectPhase: undefined }),
  })),
  claimIgnoresReclaimFence: wrap((b) => ({
    tryClaimInflight: (e, ttl, now, o) =>
      b.tryClaimInflight(e, ttl, now, o?.dispatchId ? { dispatchId: o.dispatchId } : {}),
  })),
  nonAtomicClaim: wrap((b) => ({
    async tryClaimInflight(e, ttl, now, o) {
      const cur = await b.get(e.requestId)
      await new Promise((r) => setTimeout(r, 1))
      if (cur === null) {
        await b.set({ ...e, outcome: "IN_FLIGHT", fence: 1 } as never)
        return { outcome: "claimed", entry: (await b.get(e.requestId)) as never }
      }
      return b.tryClaimInflight(e, ttl, now, o)
    },
  })),
  // Takes over a row but keeps the old heartbeat: only the random sequences see it (no table case reads a taken-over
  // row's heartbeat), so it shows they can fail.
  takeoverKeepsHeartbeat: wrap((b) => ({
    async tryClaimInflight(e, ttl, now, o) {
      const before = await b.get(e.requestId)
      const r = await b.tryClaimInflight(e, ttl, now, o)
      if (!before || r.outcome !== "claimed") return r
      const kept = { ...r.entry, lastHeartbeatAt: before.lastHeartbeatAt }
      await b.set(kept)
      return { outcome: "claimed", entry: kept }
    },
  })),
  getDropsError: wrap((b) => ({
    async get(id) {
      const r = await b.get(id)
      return r && ({ ...r, error: null } as never)
    },
  })),
  findReturnsAll: wrap((b) => ({
    async findByDispatchId() {
      const out = []
      for await (const e of b.list()) out.push(e)
      return out
    },
  })),
}
for (const [name, mutant] of Object.entries(mutants))
  testLedgerStorage(`mutant ${name}`, () => ({ storage: mutant(new MemoryLedgerStorage()) }))
// The control: the unbroken store passes.
testLedgerStorage("control", () => ({ storage: new MemoryLedgerStorage() }))

// Task stores with one swap bug each: both pass every TaskLedger case of the suite and fail its swap sequences.
const taskMutants: Record<string, () => TaskStore> = {
  // An insert (expected null) that overwrites a task someone else already wrote.
  insertOverwrites: () => {
    const b = new MemoryTaskStore()
    return {
      get: (id) => b.get(id),
      list: () => b.list(),
      swap: async (id, expected, next) =>
        b.swap(id, expected === null ? ((await b.get(id))?.version ?? null) : expected, next),
    }
  },
  // Also accepts the version before the current one (a writer that lost one race still writes).
  acceptsPreviousVersion: () => {
    const b = new MemoryTaskStore()
    const previous = new Map<string, string>()
    return {
      get: (id) => b.get(id),
      list: () => b.list(),
      async swap(id, expected, next) {
        const current = (await b.get(id))?.version ?? null
        const written = await b.swap(
          id,
          expected !== null && expected === previous.get(id) ? current : expected,
          next,
        )
        if (written && current) previous.set(id, current)
        return written
      },
    }
  },
}
for (const [name, mutant] of Object.entries(taskMutants))
  testTaskStore(`mutant ${name}`, () => ({ storage: mutant() }))
testTaskStore("control", () => ({ storage: new MemoryTaskStore() }))

// A factory whose first result's cleanup throws: the other results' cleanups still run (logged to CLEANUP_LOG).
let made = 0
testLedgerStorage("cleanup throws", () => {
  const n = made++
  return {
    storage: new MemoryLedgerStorage(),
    cleanup: () => {
      if (n === 0) throw new Error("first cleanup failed")
      appendFileSync(process.env.CLEANUP_LOG as string, `${n}\n`)
    },
  }
})
