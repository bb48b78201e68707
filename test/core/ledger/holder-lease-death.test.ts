// Heartbeat silence is judged against the holder's lease, not only the reader's. The row does not carry its holder's
// settings: a worker's ledger (leaseTtl 30, so dead after 60 s of silence by default) held a payment inside its
// effect, stalled 31 s, and an operator's ledger on the same store with leaseTtl 10 (default 20 s) counted that
// silence a death, released the payment as not executed without any override, and the redispatch paid beside the
// live owner. By default a reader now waits at least twice the lease the holder was granted.
import { describe, expect, it } from "vitest"
import { ActionLedger, LedgerWorkerAliveError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "payment" } as const
const verdict = { verified: "not_executed", by: "ops", reason: "no charge at the provider yet" } as const

/** A payment held inside its effect by a live, stalled owner on a 30 s lease; `wake` lets it finish. */
async function stalledPayment(opsOptions: { leaseTtl: number; presumedDeadAfter?: number }) {
  const storage = new MemoryLedgerStorage()
  const clock = new ManualClock()
  const common = { storage, clock, leaseRenewInterval: 0, pollTimeout: 0, onWarning: () => {} }
  const worker = new ActionLedger({ ...common, owner: "worker", leaseTtl: 30 })
  const ops = new ActionLedger({ ...common, owner: "ops", ...opsOptions })
  let charges = 0
  let inside!: () => void
  const entered = new Promise<void>((r) => {
    inside = r
  })
  let wake!: () => void
  const woken = new Promise<void>((r) => {
    wake = r
  })
  let first = true
  const pay = worker.tool({ name: "pay", binding }, async (_a: { amount: number }, tx) =>
    tx.sideEffect(async () => {
      if (first) {
        first = false
        inside()
        await woken
      }
      return { charged: ++charges }
    }),
  )
  const original = pay({ amount: 5 }, { toolCallId: "call_1" })
  await entered
  let id = ""
  for await (const r of storage.list()) id = r.requestId
  return { worker, ops, pay, original, clock, id, wake, charges: () => charges }
}

describe("a reader judges silence by at least twice the holder's lease", () => {
  it("an operator ledger with a shorter lease cannot release a live owner's payment before the holder's 60 s", async () => {
    const s = await stalledPayment({ leaseTtl: 10 })
    s.clock.advance(31) // the 30 s lease lapsed; 31 s of silence is no death by the holder's default
    await expect(s.worker.release(s.id, verdict)).rejects.toBeInstanceOf(LedgerWorkerAliveError)
    await expect(s.ops.release(s.id, verdict)).rejects.toBeInstanceOf(LedgerWorkerAliveError)
    await expect(s.ops.markWorkerDeadFor(s.id, { by: "ops", reason: "quiet" })).rejects.toBeInstanceOf(
      LedgerWorkerAliveError,
    )
    // The owner finishes its effect: one charge, and the call is settled.
    s.wake()
    expect(await s.original).toEqual({ charged: 1 })
    expect(await s.pay({ amount: 5 }, { toolCallId: "call_1" })).toEqual({ charged: 1 })
    expect(s.charges()).toBe(1)
  })

  it("past twice the holder's lease the same release is accepted", async () => {
    const s = await stalledPayment({ leaseTtl: 10 })
    s.clock.advance(61)
    const released = await s.ops.release(s.id, verdict)
    expect(released.operatorResolution).toBe("not_executed")
    s.wake()
    await s.original.catch(() => {})
  })

  it("a presumedDeadAfter the operator sets decides alone, as documented", async () => {
    const s = await stalledPayment({ leaseTtl: 10, presumedDeadAfter: 31 })
    s.clock.advance(31)
    const released = await s.ops.release(s.id, verdict)
    expect(released.operatorResolution).toBe("not_executed")
    s.wake()
    await s.original.catch(() => {})
  })
})
