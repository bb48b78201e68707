// The ledger's model-based random test (test/core/ledger/model-world.ts) over IndexedDB in Chromium: each worker and
// the checker a connection of their own to one database, as tabs of one origin would have, a fresh database each
// run, the default (strict) durability. Knobs and the repeat command: test/core/ledger/model-soak.ts, e.g.
//   VITE_MYCELIUM_MODEL_SEED=<seed> VITE_MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project browser test/browser/model-indexeddb.test.ts
import { describe, it } from "vitest"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { soakPlan, soakStore } from "../core/ledger/model-soak.ts"

// Fixed, so CI repeats the same schedules; the database's answers to overlapping calls may still arrive in any order.
const plan = soakPlan(20, 45_300)
const stamp = Date.now().toString(36)

describe("action ledger against the reference model, over IndexedDB (Chromium)", () => {
  it(
    `indexeddb: ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}`,
    () =>
      soakStore("indexeddb", plan, (run) => () => {
        const dbName = `mycelium-model-${stamp}-r${run}`
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
      }),
    plan.timeout(300),
  )
})
