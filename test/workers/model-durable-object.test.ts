// The ledger's model-based random test (test/core/ledger/model-world.ts) over the Durable Object store inside
// workerd: each worker and the checker a DurableObjectLedgerStorage of their own (a stub per call, as every Worker
// request makes), over one object or four shards, a fresh ledger name each run. The object takes `now` from the
// model's clock like every store but HTTP. Knobs and the repeat command: test/core/ledger/model-soak.ts, e.g.
//   VITE_MYCELIUM_MODEL_SEED=<seed> VITE_MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project workers test/workers/model-durable-object.test.ts
import { env } from "cloudflare:workers"
import { describe, it } from "vitest"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { soakPlan, soakStore } from "../core/ledger/model-soak.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
// Fixed, so CI repeats the same schedules; a store's answers to overlapping calls may still arrive in any order.
const plan = soakPlan(5, 45_200)
const stamp = Date.now().toString(36)

describe("action ledger against the reference model, over the Durable Object store (workerd)", () => {
  for (const shards of [1, 4]) {
    const name = `durable-object-${shards}`
    if (!plan.picks(name)) continue
    it(
      `${name} (${shards} shard${shards > 1 ? "s" : ""}): ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}`,
      () =>
        soakStore(name, plan, (run) => () => {
          const ledger = `model-${stamp}-s${shards}-r${run}`
          return { client: () => new DurableObjectLedgerStorage(LEDGER, { name: ledger, shards }) }
        }),
      plan.timeout(300),
    )
  }
})
