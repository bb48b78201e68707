// A receipt signer slower than what is left of the lease (a remote KMS, a chain store that times out): the outcome's
// receipt is signed while the lease is still renewed. Before, renewal stopped when the body returned and the lease
// lapsed during the signing: a redispatch hard-blocked the finished payment (its result then discarded), and a task
// ran a second time.
import { describe, expect, it } from "vitest"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  verifyReceipts,
} from "../../../src/receipts.ts"
import { MemoryTaskStore, TaskLedger } from "../../../src/tasks.ts"

const KEY = "slow-signer-key"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** An HMAC signer that answers only when released; `signing` settles when the first signature is asked for. */
function slowSigner() {
  const hmac = hmacReceiptSigner(KEY)
  let started!: () => void
  let release!: () => void
  const signing = new Promise<void>((r) => (started = r))
  const released = new Promise<void>((r) => (release = r))
  const signer = {
    ...hmac,
    async sign(text: string) {
      started()
      await released
      return hmac.sign(text)
    },
  }
  return { signer, signing, release }
}

// A lease of 2 s, renewed every third of it while the caller's lease holds; the redispatch comes 2.6 s into the
// signing, past the lapse of the last lease written before it, and waits for the outcome.
const LEASE = 2
const AFTER_LAPSE_MS = 2600

describe("a slow receipt signer", () => {
  it("ActionLedger: a redispatch during the signing waits for the outcome and returns it; the body ran once", async () => {
    const storage = new MemoryLedgerStorage()
    const store = new MemoryReceiptStore()
    const slow = slowSigner()
    const warnings: string[] = []
    const onWarning = (w: string) => warnings.push(w)
    const receipts = new ReceiptEmitter({ signer: slow.signer, store, agentId: "a" })
    const a = new ActionLedger({ storage, receipts, leaseTtl: LEASE, owner: "a", onWarning })
    const b = new ActionLedger({ storage, leaseTtl: LEASE, owner: "b", pollInterval: 0.02, onWarning })
    const binding = { agentId: "a", policyVersion: "v1", sideEffectClass: "keyed_mutate" } as const
    let runs = 0
    const body = async () => ({ charge: `ch_${++runs}` })
    const first = a.tool({ name: "pay", binding }, body)({ amount: 5 }, { toolCallId: "c1" })
    await slow.signing
    await sleep(AFTER_LAPSE_MS)
    const second = b.tool({ name: "pay", binding }, body)({ amount: 5 }, { toolCallId: "c1" })
    await sleep(100)
    slow.release()
    expect(await first).toEqual({ charge: "ch_1" })
    expect(await second).toEqual({ charge: "ch_1" })
    expect(runs).toBe(1)
    const [row] = await a.listTransitions()
    expect(row?.terminalOutcome).toBe("COMPLETED")
    const stored = await store.list()
    expect(stored.map((r) => r.receipt_id)).toEqual([row?.receiptRef])
    expect((await verifyReceipts(stored, { hmac: KEY })).ok).toBe(true)
    expect(warnings.filter((w) => !w.includes("in memory"))).toEqual([])
  })

  it("TaskLedger: another worker's call during the signing waits for the outcome; the task ran once", async () => {
    const storage = new MemoryTaskStore()
    const store = new MemoryReceiptStore()
    const slow = slowSigner()
    const warnings: string[] = []
    const onWarning = (w: string) => warnings.push(w)
    const receipts = new ReceiptEmitter({ signer: slow.signer, store, agentId: "a" })
    const a = new TaskLedger({ storage, receipts, leaseTtl: LEASE, owner: "a", onWarning })
    const b = new TaskLedger({ storage, leaseTtl: LEASE, owner: "b", pollInterval: 0.02, onWarning })
    let runs = 0
    const body = async () => `report ${++runs}`
    const first = a.task("report", body)({}, { taskId: "T-1" })
    await slow.signing
    await sleep(AFTER_LAPSE_MS)
    const second = b.task({ name: "report", wait: true }, body)({}, { taskId: "T-1" })
    await sleep(100)
    slow.release()
    expect(await first).toBe("report 1")
    expect(await second).toBe("report 1")
    expect(runs).toBe(1)
    const task = await a.get("T-1")
    expect(task?.row).toMatchObject({ status: "completed", result: "report 1" })
    const stored = await store.list()
    expect(stored.map((r) => r.receipt_id)).toEqual([task?.lease?.receipt_ref])
    expect((await verifyReceipts(stored, { hmac: KEY })).ok).toBe(true)
    expect(warnings.filter((w) => !w.includes("in memory"))).toEqual([])
  })
})
