// The ledger's model-based random test (test/core/ledger/model-world.ts) over the Durable Object store inside
// workerd: each worker and the checker a DurableObjectLedgerStorage of their own (a stub per call, as every Worker
// request makes), over one object or four shards, a fresh ledger name each run. The object takes `now` from the
// model's clock like every store but HTTP. Knobs and the repeat command: test/core/ledger/model-soak.ts, e.g.
//   VITE_MYCELIUM_MODEL_SEED=<seed> VITE_MYCELIUM_MODEL_RUNS=1 \
//     npx vitest run --project workers test/workers/model-durable-object.test.ts
// The -midcall lane lets time pass inside the workers' store calls (model-store.ts, MidCallTime);
// VITE_MYCELIUM_MODEL_MIDCALL=1 makes every lane do so.
import { env } from "cloudflare:workers"
import { describe, it } from "vitest"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { soakPlan, soakStore } from "../core/ledger/model-soak.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
// Fixed, so CI repeats the same schedules; a store's answers to overlapping calls may still arrive in any order.
const plan = soakPlan(5, 45_200)
const midPlan = soakPlan(4, 45_200)
const MIDCALL = plan.knobs.flag("MIDCALL")
const stamp = Date.now().toString(36)

const LANES = [
  { name: "durable-object-1", shards: 1, plan, midCall: MIDCALL },
  { name: "durable-object-4", shards: 4, plan, midCall: MIDCALL },
  { name: "durable-object-4-midcall", shards: 4, plan: midPlan, midCall: true },
]

describe("action ledger against the reference model, over the Durable Object store (workerd)", () => {
  for (const { name, shards, plan, midCall } of LANES) {
    if (!plan.picks(name)) continue
    it(
      `${name} (${shards} shard${shards > 1 ? "s" : ""}): ${plan.runs} runs of ${plan.steps} steps from seed ${plan.base}`,
      () =>
        soakStore(
          name,
          plan,
          (run) => () => {
            const ledger = `model-${stamp}-${name}-r${run}`
            return { client: () => new DurableObjectLedgerStorage(LEDGER, { name: ledger, shards }) }
          },
          { midCall },
        ),
      plan.timeout(300),
    )
  }
})
