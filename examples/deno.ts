// A Deno script with a durable ledger: `deno run --allow-read --allow-write --allow-sys=hostname examples/deno.ts ./ledger.json`.
// Run it twice: the first run charges, the second (a "restarted process") finds the call completed in the file
// and returns the recorded payment without charging again.
import { FileLedgerStorage } from "../src/adapters/file.ts"
import { ActionLedger } from "../src/index.ts"

const deno = (globalThis as unknown as { Deno?: { args: string[] } }).Deno
if (!deno) throw new Error("run this example with deno")
const path = deno.args[0] ?? "./mycelium-ledger.json"

const storage = new FileLedgerStorage(path)
const ledger = new ActionLedger({ storage, onWarning: () => {} })
let charges = 0
const sendPayment = ledger.tool(
  {
    name: "send_payment",
    binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
  },
  async (args: { amount: number; recipient: string }, tx) =>
    tx.sideEffect(async () => ({
      id: `pi_${crypto.randomUUID().slice(0, 8)}`,
      amount: args.amount,
      n: ++charges,
    })),
)

const intent = await sendPayment({ amount: 100, recipient: "acct_123" }, { toolCallId: "call_abc" })
await storage.close()
console.log(JSON.stringify({ runtime: "deno", charges, id: intent.id }))
