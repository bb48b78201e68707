// Gates a retry must keep across re-claims, each found by a mutant no other test killed: a keyed payment's provider
// key ages from its FIRST send (a re-claim that restarted the age let an UNKNOWN payment whose key the provider had
// forgotten run again), and a keyed tool that declares itself `blind` hard-blocks an UNKNOWN row however valid its
// key (the declaration says the provider's dedupe cannot be relied on).
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerHardBlockError,
  MemoryLedgerStorage,
  type TransitionContext,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const T0 = 1_800_000_000

function setup() {
  const clock = new ManualClock(T0)
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, clock, owner: "w", pollTimeout: 0, onWarning: () => {} })
  return { clock, storage, ledger }
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "ran",
    (e: unknown) => e,
  )

describe("a keyed payment's provider key ages from its first send", () => {
  it("an UNKNOWN payment retried after the key's TTL from the first attempt hard-blocks: one charge", async () => {
    const { clock, storage, ledger } = setup()
    const binding = {
      agentId: "pay",
      policyVersion: "1",
      sideEffectClass: "keyed_mutate",
      retryPermission: "retry_only_with_same_provider_idempotency_key",
      providerIdempotencyKeyParam: "idem",
      providerIdempotencyKeyTtl: 3600,
    } as const
    let charges = 0
    let mode: "fail-before" | "crash-inside" | "ok" = "fail-before"
    const pay = ledger.tool(
      { name: "pay", binding, leaseTtl: 60 },
      async (_a: { idem: string; amount: number }, tx: TransitionContext) => {
        if (mode === "fail-before") throw new Error("network down before sending")
        return tx.sideEffect(async () => {
          charges++
          if (mode === "crash-inside") throw new Error("timeout after sending")
          return "ok"
        })
      },
    )
    const args = { idem: "key-1", amount: 100 }
    await outcome(pay(args, { requestId: "order-1" }))
    clock.advance(3000)
    mode = "crash-inside"
    await outcome(pay(args, { requestId: "order-1" }))
    const row = await storage.get("order-1")
    expect([row?.terminalOutcome, row?.providerKeyFirstAttemptAt]).toEqual(["UNKNOWN", T0])
    clock.advance(700) // 3,700 s after the key was first sent: the provider may have forgotten it
    mode = "ok"
    expect(await outcome(pay(args, { requestId: "order-1" }))).toBeInstanceOf(LedgerHardBlockError)
    expect(charges).toBe(1)
  })
})

describe("a keyed tool declared blind", () => {
  it("hard-blocks its UNKNOWN row even with the same, valid provider key: one charge", async () => {
    const { clock, storage, ledger } = setup()
    const binding = {
      agentId: "pay",
      policyVersion: "1",
      sideEffectClass: "keyed_mutate",
      capability: "blind",
      providerIdempotencyKeyParam: "idem",
      providerIdempotencyKeyTtl: 3600,
    } as const
    let charges = 0
    let crash = true
    const pay = ledger.tool({ name: "pay", binding }, async (_a: { idem: string }, tx: TransitionContext) =>
      tx.sideEffect(async () => {
        charges++
        if (crash) throw new Error("timeout after sending")
        return "ok"
      }),
    )
    await outcome(pay({ idem: "k1" }, { requestId: "order-1" }))
    expect((await storage.get("order-1"))?.terminalOutcome).toBe("UNKNOWN")
    crash = false
    clock.advance(10)
    expect(await outcome(pay({ idem: "k1" }, { requestId: "order-1" }))).toBeInstanceOf(LedgerHardBlockError)
    expect(charges).toBe(1)
  })
})
