// A row whose stored terminal_outcome is EXPIRED itself: the original's legacy rows, and what its field repair (and
// ours) writes for an in-flight row with a lapsed lease and no valid outcome (reference §1.6, §1.1). The gates read
// it as EXPIRED; every write that settles it must accept the stored EXPIRED, or the redispatch re-read the same row
// without end (without a single timer: the process hung) and no operator could release it.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  argsFingerprint,
  type LedgerEntry,
  LedgerHardBlockError,
  MemoryLedgerStorage,
  ToolTransitionBinding,
  transitionKey,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const NOW = 1_800_000_000
const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" as const }
const requestId = "pay-1"

/** Fails loudly instead of hanging: a claim loop that only re-reads never yields to a timer. */
class SpinGuardStorage extends MemoryLedgerStorage {
  reads = 0
  override async get(id: string): Promise<LedgerEntry | null> {
    if (++this.reads > 200) throw new Error("claim loop re-read the row 200 times without settling it")
    return super.get(id)
  }
}

async function setup(row: Partial<LedgerEntry> = {}) {
  const storage = new SpinGuardStorage()
  const clock = new ManualClock(NOW)
  const ledger = new ActionLedger({ storage, clock, pollTimeout: 1, pollInterval: 0.1, onWarning: () => {} })
  const effectId = transitionKey({
    tool: "pay",
    binding: ToolTransitionBinding.from(binding),
    argsFingerprint: argsFingerprint({ amount: 5 }),
    dispatchId: requestId,
  })
  // As the original's repair leaves a legacy in-flight row whose lease lapsed: EXPIRED stored, status in-flight.
  await storage.set(
    newEntry(
      {
        requestId,
        tool: "pay",
        kwargs: { amount: 5, request_id: requestId },
        owner: "py-host:4242",
        fence: 2,
        effectProtocolRequired: true,
        decision: { allowed: true, verdicts: [], deniedReasons: [] },
        effectPhase: "ATTEMPTING",
        effectId,
        terminalOutcome: "EXPIRED",
        status: "in-flight",
        leaseUntil: NOW - 30,
        lastHeartbeatAt: NOW - 60,
        ...row,
      },
      NOW - 60,
    ),
  )
  let runs = 0
  const pay = ledger.tool({ name: "pay", binding }, async () => {
    runs++
    return "charged"
  })
  return { storage, ledger, pay, runs: () => runs }
}

describe("a row stored as EXPIRED", () => {
  it("a keyed redispatch hard-blocks it once and converts it to BLOCKED, without running", async () => {
    const { storage, pay, runs } = await setup()
    await expect(pay({ amount: 5 }, { requestId })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(runs()).toBe(0)
    expect(await storage.get(requestId)).toMatchObject({
      terminalOutcome: "BLOCKED",
      status: "failed",
      fence: 2,
    })
    // The next redispatch reads BLOCKED and refuses again: nothing ran.
    await expect(pay({ amount: 5 }, { requestId })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(runs()).toBe(0)
  })

  it("an operator can assert its worker dead and release it not_executed: one re-run, then replays", async () => {
    const { storage, ledger, pay, runs } = await setup()
    const dead = await ledger.markWorkerDeadFor(requestId, {
      by: "ops",
      reason: "host gone",
      overrideHeartbeat: true,
    })
    expect(dead).toMatchObject({ workerDeadAssertedBy: "ops" })
    const released = await ledger.release(requestId, {
      verified: "not_executed",
      by: "ops",
      reason: "no charge",
    })
    expect(released).toMatchObject({ operatorResolution: "not_executed", releasedFromOutcome: "EXPIRED" })
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(runs()).toBe(1)
    expect(await storage.get(requestId)).toMatchObject({ terminalOutcome: "COMPLETED", fence: 4 })
  })

  it("a completed release stores the verified result, which redispatches replay", async () => {
    const { ledger, pay, runs } = await setup()
    await ledger.release(requestId, {
      verified: "completed",
      result: "ch_9",
      by: "ops",
      reason: "seen at provider",
    })
    expect(await pay({ amount: 5 }, { requestId })).toBe("ch_9")
    expect(runs()).toBe(0)
  })
})
