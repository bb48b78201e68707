// One holder, two writes at once: a lease renewal (or a provider ref) built on the row as it was read, and a boundary
// move that lands between that read and its write. The late write used to put the boundary back to not_crossed, so a
// failure after the effect was recorded as FAILED_BEFORE_EFFECT and a redispatch with safe_retry paid again.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  type LedgerStorage,
  ManualClock,
  MemoryLedgerStorage,
  type TransitionExpectation,
} from "../../../src/core/index.ts"

const binding = {
  agentId: "a",
  policyVersion: "1",
  sideEffectClass: "non_idempotent_mutate",
  retryPermission: "safe_retry",
} as const
const allowed = { allowed: true, verdicts: [], deniedReasons: [] }

/** A memory store whose next `get` answers with the row as it was, but only once `release()` is called. */
function heldRead(): { store: LedgerStorage; rows: MemoryLedgerStorage; hold: () => () => void } {
  const rows = new MemoryLedgerStorage()
  let gate: Promise<void> | null = null
  const store: LedgerStorage = {
    get: async (id) => {
      const row = await rows.get(id)
      const g = gate
      gate = null
      if (g) await g
      return row
    },
    set: (e) => rows.set(e),
    tryClaimInflight: (e, ttl, now, o) => rows.tryClaimInflight(e, ttl, now, o),
    tryTransition: (n, x) => rows.tryTransition(n, x),
    list: (o) => rows.list(o),
  }
  const hold = () => {
    let release!: () => void
    gate = new Promise<void>((r) => {
      release = r
    })
    return release
  }
  return { store, rows, hold }
}

async function claimed(ledger: ActionLedger): Promise<{ fence: number; owner: string | null }> {
  const c = await ledger.claim({
    tool: "pay",
    args: { amount: 1 },
    binding,
    decision: allowed,
    meta: { requestId: "r1" },
  })
  return { fence: c.entry.fence, owner: c.entry.owner }
}

describe("a holder's concurrent writes never put the boundary back", () => {
  for (const [label, late] of [
    ["a renewal", (l: ActionLedger, g: { fence: number; owner: string | null }) => l.renewLease("r1", g)],
    [
      "a provider ref",
      (l: ActionLedger, g: { fence: number; owner: string | null }) =>
        l.attachExternalOperationRef("r1", "pi_1", g),
    ],
  ] as const) {
    it(`${label} read before a boundary move and written after it keeps the boundary, and both succeed`, async () => {
      const { store, rows, hold } = heldRead()
      const ledger = new ActionLedger({ storage: store, onWarning: () => {} })
      const guard = await claimed(ledger)
      const release = hold()
      const write = late(ledger, guard)
      await ledger.advanceBoundary("r1", "crossed", guard)
      release()
      const row = (await write) as LedgerEntry
      expect(row.sideEffectBoundary).toBe("crossed")
      expect((await rows.get("r1"))?.sideEffectBoundary).toBe("crossed")
      // The effect may have happened: a failure is after the effect, and a redispatch never runs it again.
      await ledger.fail("r1", "boom", guard)
      expect((await rows.get("r1"))?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
      let runs = 0
      const pay = ledger.tool({ name: "pay", binding }, async () => ++runs)
      await expect(pay({ amount: 1 }, { requestId: "r1" })).rejects.toMatchObject({
        code: "ledger_hard_block",
      })
      expect(runs).toBe(0)
    })
  }

  it("a write whose claim was taken over is still refused, not rebuilt", async () => {
    const { store, rows, hold } = heldRead()
    const ledger = new ActionLedger({ storage: store, onWarning: () => {} })
    const guard = await claimed(ledger)
    const release = hold()
    const write = ledger.renewLease("r1", guard)
    const row = (await rows.get("r1")) as LedgerEntry
    await rows.set({ ...row, fence: row.fence + 1, sideEffectBoundary: "maybe_crossed" })
    release()
    await expect(write).rejects.toMatchObject({ code: "ledger_outcome_already_set" })
    expect((await rows.get("r1"))?.fence).toBe(row.fence + 1)
  })
})

describe("a late owner (its lease lapsed) never starts an effect", () => {
  const permissive = { ...binding, spendability: "multi_use" } as const

  it("sideEffect() after the lease lapsed is refused and the effect never runs", async () => {
    const clock = new ManualClock()
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      clock,
      leaseTtl: 10,
      leaseRenewInterval: 0,
      onWarning: () => {},
    })
    let effects = 0
    const pay = ledger.tool({ name: "pay", binding: permissive }, async (_a: { amount: number }, tx) => {
      clock.advance(11)
      return tx.sideEffect(() => ++effects)
    })
    await expect(pay({ amount: 1 }, { requestId: "late" })).rejects.toMatchObject({
      code: "ledger_outcome_already_set",
    })
    expect(effects).toBe(0)
  })

  it("a redispatch that judged the lapsed row not crossed and a late owner's effect: one effect", async () => {
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    let redispatchAtClaim!: () => void
    const atClaim = new Promise<void>((r) => {
      redispatchAtClaim = r
    })
    let letClaim!: () => void
    const claimMayGo = new Promise<void>((r) => {
      letClaim = r
    })
    // The redispatcher's store: its takeover waits until the late owner has tried to start its effect.
    const held: LedgerStorage = new Proxy(rows, {
      get(t, k) {
        if (k === "tryClaimInflight" || k === "tryTransition") {
          return async (...a: unknown[]) => {
            // Only a takeover (a reclaim at the fence the gate judged, or a fenced reset to a new claim) waits.
            const takeover =
              k === "tryClaimInflight"
                ? typeof (a[3] as { reclaimFence?: unknown } | undefined)?.reclaimFence === "number"
                : (a[0] as LedgerEntry).fence > (a[1] as { fence: number }).fence
            if (takeover) {
              redispatchAtClaim()
              await claimMayGo
            }
            return (t[k] as (...x: unknown[]) => unknown).apply(t, a)
          }
        }
        const v = (t as unknown as Record<string | symbol, unknown>)[k]
        return typeof v === "function" ? v.bind(t) : v
      },
    })
    const options = { clock, leaseTtl: 10, leaseRenewInterval: 0, onWarning: () => {} }
    const late = new ActionLedger({ ...options, storage: rows })
    const redispatcher = new ActionLedger({ ...options, storage: held })
    let effects = 0
    let wake!: () => void
    const woken = new Promise<void>((r) => {
      wake = r
    })
    let settled!: () => void
    const redispatchSettled = new Promise<void>((r) => {
      settled = r
    })
    const stalled = late
      .tool({ name: "pay", binding: permissive }, async (_a: { amount: number }, tx) => {
        await woken
        return tx.sideEffect(async () => {
          effects++
          // Inside its effect, the late owner lets the redispatch's takeover land, and finishes after it.
          letClaim()
          await redispatchSettled
          return effects
        })
      })({ amount: 1 }, { requestId: "r2" })
      .catch((e: unknown) => e)
    while (!(await rows.get("r2"))) await new Promise((r) => setTimeout(r, 1))
    clock.advance(11)
    const redispatched = redispatcher
      .tool({ name: "pay", binding: permissive }, async (_a: { amount: number }, tx) =>
        tx.sideEffect(() => ++effects),
      )({ amount: 1 }, { requestId: "r2" })
      .catch((e: unknown) => e)
      .finally(settled)
    await atClaim
    wake()
    // Refused, the late owner never reaches its effect: the takeover goes ahead alone.
    await Promise.race([stalled, new Promise((r) => setTimeout(r, 50))])
    letClaim()
    await Promise.all([stalled, redispatched])
    expect(effects).toBe(1)
  })

  it("a redispatch blocking a lapsed row never writes not_crossed over a late owner's boundary move", async () => {
    // The late owner's clock runs behind: in its view the lease still holds, so it may start its effect.
    const lateClock = new ManualClock()
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    let atBlock!: () => void
    const blocking = new Promise<void>((r) => {
      atBlock = r
    })
    let letBlock!: () => void
    const blockMayGo = new Promise<void>((r) => {
      letBlock = r
    })
    const held: LedgerStorage = new Proxy(rows, {
      get(t, k) {
        if (k === "tryTransition")
          return async (next: LedgerEntry, x: TransitionExpectation) => {
            if (next.terminalOutcome === "BLOCKED") {
              atBlock()
              await blockMayGo
            }
            return t.tryTransition(next, x)
          }
        const v = (t as unknown as Record<string | symbol, unknown>)[k]
        return typeof v === "function" ? v.bind(t) : v
      },
    })
    const options = { leaseTtl: 10, leaseRenewInterval: 0, onWarning: () => {} }
    const late = new ActionLedger({ ...options, clock: lateClock, storage: rows })
    const redispatcher = new ActionLedger({ ...options, clock, storage: held })
    const strict = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
    let wake!: () => void
    const woken = new Promise<void>((r) => {
      wake = r
    })
    const stalled = late
      .tool({ name: "pay", binding: strict }, async (_a: { amount: number }, tx) => {
        await woken
        return tx.sideEffect(async () => {
          letBlock()
          return 1
        })
      })({ amount: 1 }, { requestId: "r3" })
      .catch((e: unknown) => e)
    while (!(await rows.get("r3"))) await new Promise((r) => setTimeout(r, 1))
    clock.advance(11)
    const redispatched = redispatcher
      .tool({ name: "pay", binding: strict }, async () => 2)({ amount: 1 }, { requestId: "r3" })
      .catch((e: unknown) => e)
    await blocking
    wake()
    // The block lost to the boundary move and the redispatch looked again: it blocks on the row as it now is, or
    // replays the late owner's result if that landed first. Its own body never runs.
    const answer = await redispatched
    if (answer !== 1) expect(answer).toMatchObject({ code: "ledger_hard_block" })
    await stalled
    expect((await rows.get("r3"))?.sideEffectBoundary).not.toBe("not_crossed")
  })

  it("an operator's not_executed release, judged on a not_crossed row, is refused once the late owner crossed", async () => {
    const lateClock = new ManualClock()
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    let atRelease!: () => void
    const releasing = new Promise<void>((r) => {
      atRelease = r
    })
    let letRelease!: () => void
    const releaseMayGo = new Promise<void>((r) => {
      letRelease = r
    })
    const held: LedgerStorage = new Proxy(rows, {
      get(t, k) {
        if (k === "tryTransition")
          return async (next: LedgerEntry, x: TransitionExpectation) => {
            atRelease()
            await releaseMayGo
            return t.tryTransition(next, x)
          }
        const v = (t as unknown as Record<string | symbol, unknown>)[k]
        return typeof v === "function" ? v.bind(t) : v
      },
    })
    const options = { leaseTtl: 10, leaseRenewInterval: 0, onWarning: () => {} }
    const late = new ActionLedger({ ...options, clock: lateClock, storage: rows })
    const operator = new ActionLedger({ ...options, clock, storage: held })
    const c = await late.claim({
      tool: "pay",
      args: { amount: 1 },
      binding,
      decision: allowed,
      meta: { requestId: "r4" },
    })
    clock.advance(11)
    const release = operator
      .release("r4", {
        verified: "not_executed",
        by: "ops",
        reason: "no charge found",
        overrideDeathSignal: "host gone",
      })
      .catch((e: unknown) => e)
    await releasing
    await late.advanceBoundary("r4", "maybe_crossed", { fence: c.entry.fence, owner: c.entry.owner })
    letRelease()
    expect(await release).toMatchObject({ code: "ledger_already_resolved" })
    expect((await rows.get("r4"))?.sideEffectBoundary).toBe("maybe_crossed")
    expect((await rows.get("r4"))?.operatorResolution).toBeNull()
  })
})
