// What receipts add to a ledgered call (memory stores, so the number is the signing and chaining work itself),
// and a whole task through TaskLedger. Interleaved A/B rounds in one process: the ratio is the result.
import { ActionLedger, MemoryLedgerStorage } from "../src/core/index.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../src/receipts.ts"
import { TaskLedger } from "../src/tasks.ts"

const binding = { agentId: "bench", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

function tool(withReceipts: boolean) {
  const receipts = withReceipts
    ? new ReceiptEmitter({
        signer: hmacReceiptSigner("bench-key"),
        store: new MemoryReceiptStore(),
        agentId: "bench",
      })
    : null
  const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), receipts, onWarning: () => {} })
  return ledger.tool({ name: "send_payment", binding }, async (a: { amount: number }) => ({
    ok: true,
    amount: a.amount,
  }))
}

async function perCall(fn: ReturnType<typeof tool>, label: string, n: number): Promise<number> {
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn({ amount: i }, { toolCallId: `${label}-${i}` })
  return ((performance.now() - t0) / n) * 1000
}

const plain = tool(false)
const signed = tool(true)
await perCall(plain, "warm-a", 500)
await perCall(signed, "warm-b", 500)
const a: number[] = []
const b: number[] = []
for (let round = 0; round < 5; round++) {
  a.push(await perCall(plain, `a${round}`, 2000))
  b.push(await perCall(signed, `b${round}`, 2000))
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number
console.log(`ledgered call, memory store:          ${median(a).toFixed(1)} us`)
console.log(
  `  + HMAC receipt (record + chain link): ${median(b).toFixed(1)} us  (x${(median(b) / median(a)).toFixed(2)})`,
)

const tasks = new TaskLedger({ leaseRenewInterval: 0, onWarning: () => {} })
const job = tasks.task("job", async () => 1)
const t0 = performance.now()
for (let i = 0; i < 2000; i++) await job({}, { taskId: `t-${i}` })
console.log(
  `task run, memory store:               ${(((performance.now() - t0) / 2000) * 1000).toFixed(1)} us`,
)
const t1 = performance.now()
for (let i = 0; i < 2000; i++) await job({}, { taskId: `t-${i}` })
console.log(
  `task replay, memory store:            ${(((performance.now() - t1) / 2000) * 1000).toFixed(1)} us`,
)
