// The scenarios of a row whose stored terminal_outcome is EXPIRED itself, over any store: memory's test
// (stored-expired.test.ts) and the server stores' (test/adapters/stored-expired-stores.test.ts) run the same ones.
import { expect, it } from "vitest"
import { newEntry } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  argsFingerprint,
  type LedgerEntry,
  LedgerHardBlockError,
  type LedgerStorage,
  ToolTransitionBinding,
  transitionKey,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const NOW = 1_800_000_000
const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" as const }
let n = 0

/** Fails loudly instead of hanging: a claim loop that only re-reads never yields to a timer. */
function spinGuarded(store: LedgerStorage): LedgerStorage {
  let reads = 0
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === "get")
        return async (id: string): Promise<LedgerEntry | null> => {
          if (++reads > 200) throw new Error("claim loop re-read the row 200 times without settling it")
          return target.get(id)
        }
      const v: unknown = Reflect.get(target, key, receiver)
      return typeof v === "function" ? v.bind(target) : v
    },
  })
}

async function setup(make: () => Promise<LedgerStorage>) {
  const storage = spinGuarded(await make())
  const requestId = `pay-${++n}`
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
      },
      NOW - 60,
    ),
  )
  let runs = 0
  const pay = ledger.tool({ name: "pay", binding }, async () => {
    runs++
    return "charged"
  })
  return { storage, ledger, pay, requestId, runs: () => runs }
}

/** The scenarios, each on a fresh store from `make` (inside a describe). */
export function expiredRowScenarios(make: () => Promise<LedgerStorage>): void {
  it("a keyed redispatch hard-blocks it once and converts it to BLOCKED, without running", async () => {
    const { storage, pay, requestId, runs } = await setup(make)
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
    const { storage, ledger, pay, requestId, runs } = await setup(make)
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
    expect(released).toMatchObject({
      operatorResolution: "not_executed",
      releasedFromOutcome: "EXPIRED",
      terminalOutcome: "BLOCKED",
      fence: 3,
    })
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(await pay({ amount: 5 }, { requestId })).toBe("charged")
    expect(runs()).toBe(1)
    expect(await storage.get(requestId)).toMatchObject({ terminalOutcome: "COMPLETED", fence: 4 })
  })

  it("a completed release stores the verified result, which redispatches replay", async () => {
    const { ledger, pay, requestId, runs } = await setup(make)
    await ledger.release(requestId, {
      verified: "completed",
      result: "ch_9",
      by: "ops",
      reason: "seen at provider",
    })
    expect(await pay({ amount: 5 }, { requestId })).toBe("ch_9")
    expect(runs()).toBe(0)
  })
}
