// The ledger's model-based random test (test/core/ledger/model-world.ts) over IndexedDB in Chromium: each worker and
// the checker a connection of their own to one database, as tabs of one origin would have, a fresh database each
// run, the default (strict) durability. Knobs and the repeat command: test/core/ledger/model-soak.ts, e.g.
//   VITE_MYCELIUM_MODEL_SEED=<seed> VITE_MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project browser test/browser/model-indexeddb.test.ts
// The -midcall lane lets time pass inside the workers' store calls (model-store.ts, MidCallTime);
// VITE_MYCELIUM_MODEL_MIDCALL=1 makes the other lane do so too.
import { describe, it } from "vitest"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { soakPlan, soakStore } from "../core/ledger/model-soak.ts"

// Fixed, so CI repeats the same schedules; the database's answers to overlapping calls may still arrive in any order.
const plan = soakPlan(20, 45_300)
const midPlan = soakPlan(6, 45_300)
const stamp = Date.now().toString(36)

/** Run `run`'s store: a database of its own, one connection per client. */
const database = (lane: string, run: number) => () => {
  const dbName = `mycelium-model-${stamp}-${lane}-r${run}`
  const opened: IndexedDbLedgerStorage[] = []
  return {
    client() {
      const s = new IndexedDbLedgerStorage({ dbName })
      opened.push(s)
      return s
    },
    async close() {
      for (const s of opened) await s.close()
      indexedDB.deleteDatabase(dbName)
    },
  }
}

const LANES = [
  { name: "indexeddb", plan, midCall: plan.knobs.flag("MIDCALL") },
  { name: "indexeddb-midcall", plan: midPlan, midCall: true },
]

describe("action ledger against the reference model, over IndexedDB (Chromium)", () => {
  for (const { name, plan, midCall } of LANES) {
    if (!plan.picks(name)) continue
    it(
      `${name}: ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}`,
      () => soakStore(name, plan, (run) => database(name, run), { midCall }),
      plan.timeout(300),
    )
  }
})
