// The ledger quickstart as a script: `deno run examples/quickstart.ts`, `bun examples/quickstart.ts` or
// `npx tsx examples/quickstart.ts` from a checkout. The core needs nothing but Web APIs, so the file is the same.
import { ActionLedger } from "../src/index.ts"

const ledger = new ActionLedger({ pollInterval: 0.005, onWarning: () => {} })
let charges = 0
const sendPayment = ledger.tool(
  {
    name: "send_payment",
    binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
  },
  async (args: { amount: number; recipient: string }, tx) =>
    tx.sideEffect(async () => {
      charges++
      await new Promise((r) => setTimeout(r, 20))
      return { id: `pi_${charges}`, amount: args.amount }
    }),
)

// A framework redispatches the same tool call ten times while the first still runs.
const results = await Promise.all(
  Array.from({ length: 10 }, () =>
    sendPayment({ amount: 100, recipient: "acct_123" }, { toolCallId: "call_abc" }),
  ),
)
const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node"
console.log(JSON.stringify({ runtime, charges, ids: [...new Set(results.map((r) => r.id))] }))
