// An operator's verdict is about the attempt they looked at. With `expectedFence`, a release or a worker-death
// assertion is refused once another attempt has claimed the transition (its fence moved), and the row is untouched.

import { describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import { ActionLedger, LedgerReleaseRefusedError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const T0 = 1_767_225_600

async function setup() {
  const clock = new ManualClock(T0)
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, clock, leaseTtl: 10, onWarning: () => {} })
  // What the operator saw: attempt 1, ambiguous (maybe crossed, no outcome).
  const base = { requestId: "pay:1", tool: "pay", owner: "w1" }
  await storage.set({
    ...newEntry({ ...base, fence: 1, leaseUntil: T0 - 1 }, T0 - 20),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
  return { clock, storage, ledger, base }
}

describe("release and markWorkerDeadFor with expectedFence", () => {
  it("a release formed on fence 1 is refused once attempt 2 holds the row; the row is unchanged", async () => {
    const { storage, ledger, base } = await setup()
    // Meanwhile another attempt claimed it (fence 2) and its lease lapsed too.
    await storage.set({ ...newEntry({ ...base, owner: "w2", fence: 2, leaseUntil: T0 - 1 }, T0 - 5) })
    const before = await storage.get("pay:1")
    const verdict = {
      verified: "not_executed",
      by: "ops",
      reason: "no charge",
      overrideDeathSignal: "host gone",
    } as const
    const err = await ledger.release("pay:1", { ...verdict, expectedFence: 1 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerReleaseRefusedError)
    expect((err as Error).message).toContain("at fence 2, not 1")
    expect(await storage.get("pay:1")).toEqual(before)
    const released = await ledger.release("pay:1", { ...verdict, expectedFence: 2 })
    expect(released).toMatchObject({ operatorResolution: "not_executed", fence: 3 })
  })

  it("the matching fence releases; without expectedFence nothing changes from before", async () => {
    const { ledger } = await setup()
    const released = await ledger.release("pay:1", {
      verified: "completed",
      result: { charged: true },
      by: "ops",
      reason: "the provider shows the charge",
      expectedFence: 1,
    })
    expect(released).toMatchObject({ operatorResolution: "completed", terminalOutcome: "COMPLETED" })
    const other = await setup()
    await expect(
      other.ledger.release("pay:1", { verified: "completed", result: 1, by: "ops", reason: "seen" }),
    ).resolves.toMatchObject({ operatorResolution: "completed" })
  })

  it("markWorkerDeadFor refuses a stale fence and accepts the current one", async () => {
    const { storage, ledger, base } = await setup()
    await storage.set({ ...newEntry({ ...base, owner: "w2", fence: 2, leaseUntil: T0 - 1 }, T0 - 5) })
    const opts = { by: "ops", reason: "node drained", overrideHeartbeat: true }
    await expect(ledger.markWorkerDeadFor("pay:1", { ...opts, expectedFence: 1 })).rejects.toThrow(
      LedgerReleaseRefusedError,
    )
    expect((await storage.get("pay:1"))?.workerDeadAssertedBy).toBeNull()
    const marked = await ledger.markWorkerDeadFor("pay:1", { ...opts, expectedFence: 2 })
    expect(marked.workerDeadAssertedBy).toBe("ops")
  })

  it("an expectedFence that is not a whole number >= 0 is refused, never matched", async () => {
    const { ledger } = await setup()
    for (const bad of [-1, 1.5, Number.NaN]) {
      await expect(
        ledger.release("pay:1", { verified: "completed", by: "ops", reason: "x", expectedFence: bad }),
      ).rejects.toThrow(/whole number/)
    }
  })
})
