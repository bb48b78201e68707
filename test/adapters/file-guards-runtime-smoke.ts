// Run by file-runtimes.test.ts under Deno and Bun: the task, receipt and state-flush file stores, each written by
// one instance and read back by a fresh one over the same file. Prints one JSON line.
import process from "node:process"
import { FileReceiptStore } from "../../src/adapters/file-receipts.ts"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"
import { StateFlush } from "../../src/state.ts"
import { TaskLedger } from "../../src/tasks.ts"

const dir = process.argv[2] as string
let taskRuns = 0
const tasks = new TaskLedger({ storage: new FileTaskStore(`${dir}/tasks.json`), leaseTtl: 60 })
const report = tasks.task({ name: "report", idFrom: ["day"] }, async (a: { day: string }) => ({
  day: a.day,
  n: ++taskRuns,
}))
await report({ day: "d1" })
const again = await new TaskLedger({ storage: new FileTaskStore(`${dir}/tasks.json`) }).task(
  { name: "report", idFrom: ["day"] },
  async () => ({ day: "never", n: -1 }),
)({ day: "d1" })

const receipts = new ReceiptEmitter({
  signer: hmacReceiptSigner("k"),
  store: new FileReceiptStore(`${dir}/receipts.jsonl`),
  agentId: "a",
})
const ledger = new ActionLedger({ receipts, onWarning: () => {} })
const pay = ledger.tool(
  { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
  async (a: { amount: number }) => ({ paid: a.amount }),
)
await pay({ amount: 1 }, { toolCallId: "c1" })
await pay({ amount: 2 }, { toolCallId: "c2" })
const stored = await new FileReceiptStore(`${dir}/receipts.jsonl`).list()
const verified = await verifyReceipts(stored, { hmac: "k" }, { requireChain: true })

const flush = new StateFlush({ storage: new FileStateFlushStore(`${dir}/state.json`) })
await flush.run("run-1", async (run) => {
  run.record({ page: 3 })
  return run.state
})
const snapshot = await new StateFlush({ storage: new FileStateFlushStore(`${dir}/state.json`) }).load("run-1")

console.log(
  JSON.stringify({
    taskRuns,
    taskReplay: again,
    receipts: stored.length,
    receiptsOk: verified.ok,
    state: { status: snapshot?.status, state: snapshot?.state },
  }),
)
