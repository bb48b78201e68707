import { testLedgerStorage } from "../../src/conformance.ts"
import { type LedgerStorage, MemoryLedgerStorage } from "../../src/core/index.ts"

testLedgerStorage("memory", () => ({ storage: new MemoryLedgerStorage() }))

/** A store as a third-party adapter might be: no dispatch index at all (no siblings, no findByDispatchId). */
function withoutDispatchIndex(inner: MemoryLedgerStorage): LedgerStorage {
  return {
    get: (id) => inner.get(id),
    set: (e) => inner.set(e),
    tryClaimInflight: async (entry, leaseTtl, now, options) => {
      const r = await inner.tryClaimInflight(entry, leaseTtl, now, options)
      return r.outcome === "claimed" ? { outcome: r.outcome, entry: r.entry } : r
    },
    tryTransition: (next, expect) => inner.tryTransition(next, expect),
    list: (options) => inner.list(options),
  }
}

// Its dispatch-id cases must show as skipped, each with the capability it lacks, never as passed.
testLedgerStorage("memory without a dispatch index (capability cases skip with their reason)", () => ({
  storage: withoutDispatchIndex(new MemoryLedgerStorage()),
}))
