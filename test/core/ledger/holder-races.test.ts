// Two writers on one row, one step apart: a write built on the row as it was read, and another writer's step that
// lands between that read and the write. Each case failed on the code before it (a second effect, or a boundary put
// back to not_crossed, after which a failure read as before the effect and a safe_retry redispatch paid again).

import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  MemoryLedgerStorage,
  type TransitionExpectation,
} from "../../../src/core/index.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../../src/core/receipts/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { gatedStore, nextRead } from "./gated-store.ts"

const binding = {
  agentId: "a",
  policyVersion: "1",
  sideEffectClass: "non_idempotent_mutate",
  retryPermission: "safe_retry",
} as const
const allowed = { allowed: true, verdicts: [], deniedReasons: [] }
const options = { leaseTtl: 10, leaseRenewInterval: 0, onWarning: () => {} }

async function claimed(
  ledger: ActionLedger,
  requestId: string,
): Promise<{ fence: number; owner: string | null }> {
  const c = await ledger.claim({
    tool: "pay",
    args: { amount: 1 },
    binding,
    decision: allowed,
    meta: { requestId },
  })
  return { fence: c.entry.fence, owner: c.entry.owner }
}

/**
 * A holder on a store whose next read, once armed, answers with the row as it was only after the gate opens, and
 * the same holder's second handle (`twin`: another process or isolate serving it, as an edge API with several
 * isolates does). One ActionLedger queues its own writes to a row, so the race needs two.
 */
async function holderWithGatedRead() {
  const rows = new MemoryLedgerStorage()
  const read = nextRead()
  const gate = gatedStore(rows, read.gated)
  const ledger = new ActionLedger({ storage: gate.store, onWarning: () => {} })
  const twin = new ActionLedger({ storage: rows, onWarning: () => {} })
  const guard = await claimed(ledger, "r1")
  return { rows, arm: read.arm, gate, ledger, twin, guard }
}

/** Resolves a promise from outside: the step a test lets happen next. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire!: () => void
  const done = new Promise<void>((r) => {
    fire = r
  })
  return { done, fire }
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
      const { rows, arm, gate, ledger, twin, guard } = await holderWithGatedRead()
      arm()
      const write = late(ledger, guard)
      await gate.arrived
      await twin.advanceBoundary("r1", "crossed", guard)
      gate.open()
      const row = (await write) as LedgerEntry
      expect(row.sideEffectBoundary).toBe("crossed")
      expect((await rows.get("r1"))?.sideEffectBoundary).toBe("crossed")
      // The effect may have happened: the failure keeps the boundary, and a redispatch never runs it again.
      await ledger.fail("r1", "boom", guard)
      let runs = 0
      const pay = ledger.tool({ name: "pay", binding }, async () => ++runs)
      await expect(pay({ amount: 1 }, { requestId: "r1" })).rejects.toMatchObject({
        code: "ledger_hard_block",
      })
      expect(runs).toBe(0)
    })
  }

  it("a write whose claim was taken over is still refused, not rebuilt", async () => {
    const { rows, arm, gate, ledger, guard } = await holderWithGatedRead()
    arm()
    const write = ledger.renewLease("r1", guard)
    await gate.arrived
    const row = (await rows.get("r1")) as LedgerEntry
    await rows.set({ ...row, fence: row.fence + 1, sideEffectBoundary: "maybe_crossed" })
    gate.open()
    await expect(write).rejects.toMatchObject({ code: "ledger_outcome_already_set" })
    expect((await rows.get("r1"))?.fence).toBe(row.fence + 1)
  })
})

describe("one ledger's writes to a row run in call order", () => {
  it("a renewal and a provider ref sent together both land (each set the whole row: the later one won)", async () => {
    const rows = new MemoryLedgerStorage()
    // Every read takes a while, so without a queue both writes are built on the row before either landed.
    const slow = gatedStore(rows, (method) => method === "get")
    slow.open()
    const ledger = new ActionLedger({ ...options, storage: slow.store })
    const guard = await claimed(ledger, "r1")
    // Renewed to 100 s on a clock 5 s before the claim's lease (10 s) ends.
    const until = ((await rows.get("r1"))?.leaseUntil as number) + 95
    const later = new ActionLedger({ ...options, storage: slow.store, clock: new ManualClock(until - 100) })
    const [renewed, ref] = await Promise.all([
      later.renewLease("r1", { ...guard, leaseTtl: 100 }),
      later.attachExternalOperationRef("r1", "pi_1", guard),
    ])
    expect(renewed.leaseUntil).toBe(until)
    expect(ref).toMatchObject({ externalOperationRef: "pi_1", leaseUntil: until })
    expect(await rows.get("r1")).toMatchObject({ externalOperationRef: "pi_1", leaseUntil: until })
  })

  it("a refused write does not stop the next one", async () => {
    const ledger = new ActionLedger(options)
    const guard = await claimed(ledger, "r1")
    const [stale, ref] = await Promise.allSettled([
      ledger.renewLease("r1", { ...guard, fence: guard.fence + 1 }),
      ledger.attachExternalOperationRef("r1", "pi_2", guard),
    ])
    expect(stale).toMatchObject({ status: "rejected", reason: { code: "ledger_outcome_already_set" } })
    expect(ref).toMatchObject({ status: "fulfilled", value: { externalOperationRef: "pi_2" } })
  })
})

describe("a failure is classified by the boundary it is written over", () => {
  for (const [moved, outcome, receipts] of [
    ["maybe_crossed", "UNKNOWN", 0],
    ["crossed", "FAILED_AFTER_EFFECT", 1],
  ] as const) {
    it(`a failure read before a move to ${moved} and written after it records ${outcome}`, async () => {
      const rows = new MemoryLedgerStorage()
      const read = nextRead()
      const gate = gatedStore(rows, read.gated)
      const store = new MemoryReceiptStore()
      const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "a" })
      const ledger = new ActionLedger({ ...options, storage: gate.store, receipts: emitter })
      const twin = new ActionLedger({ ...options, storage: rows })
      const guard = await claimed(ledger, "r1")
      read.arm()
      const failed = ledger.fail("r1", "boom", guard)
      await gate.arrived
      await twin.advanceBoundary("r1", moved, guard)
      gate.open()
      expect(await failed).toMatchObject({ terminalOutcome: outcome, sideEffectBoundary: moved })
      expect(await rows.get("r1")).toMatchObject({ terminalOutcome: outcome, sideEffectBoundary: moved })
      // The original issues no receipt for UNKNOWN; a redone write appends its own receipt, not the first one's.
      const signed = await store.list()
      expect(signed).toHaveLength(receipts)
      expect(signed.map((r) => r.receipt_id)).toEqual(receipts ? [(await rows.get("r1"))?.receiptRef] : [])
    })
  }

  it("fail({ boundary }) raises the stored boundary, never lowers it", async () => {
    const ledger = new ActionLedger(options)
    for (const [id, stored, told, outcome, boundary] of [
      ["a", null, "maybe_crossed", "UNKNOWN", "maybe_crossed"],
      ["b", "crossed", "maybe_crossed", "FAILED_AFTER_EFFECT", "crossed"],
      ["c", "maybe_crossed", "not_crossed", "UNKNOWN", "maybe_crossed"],
      ["d", null, "crossed", "FAILED_AFTER_EFFECT", "crossed"],
    ] as const) {
      const guard = await claimed(ledger, id)
      if (stored) await ledger.advanceBoundary(id, stored, guard)
      expect(await ledger.fail(id, "boom", { ...guard, boundary: told })).toMatchObject({
        terminalOutcome: outcome,
        sideEffectBoundary: boundary,
      })
    }
  })

  it("fail() on a row already past not_crossed records UNKNOWN or FAILED_AFTER_EFFECT, never 'before the effect'", async () => {
    const ledger = new ActionLedger(options)
    for (const [id, boundary, outcome] of [
      ["n", null, "FAILED_BEFORE_EFFECT"],
      ["m", "maybe_crossed", "UNKNOWN"],
      ["c", "crossed", "FAILED_AFTER_EFFECT"],
    ] as const) {
      const guard = await claimed(ledger, id)
      if (boundary) await ledger.advanceBoundary(id, boundary, guard)
      expect(await ledger.fail(id, "boom", guard)).toMatchObject({ terminalOutcome: outcome })
    }
  })
})

describe("a late owner (its lease lapsed) never starts an effect", () => {
  const permissive = { ...binding, spendability: "multi_use" } as const

  it("sideEffect() after the lease lapsed is refused and the effect never runs", async () => {
    const clock = new ManualClock()
    const ledger = new ActionLedger({ ...options, storage: new MemoryLedgerStorage(), clock })
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
    // The redispatcher's takeover (a reclaim at the judged fence, or a reset to a new claim) waits at the gate.
    const gate = gatedStore(rows, (method, a) =>
      method === "tryClaimInflight"
        ? typeof (a[3] as { reclaimFence?: unknown } | undefined)?.reclaimFence === "number"
        : method === "tryTransition" && (a[0] as LedgerEntry).fence > (a[1] as TransitionExpectation).fence,
    )
    const late = new ActionLedger({ ...options, clock, storage: rows })
    const redispatcher = new ActionLedger({ ...options, clock, storage: gate.store })
    let effects = 0
    const woken = signal()
    const redispatchSettled = signal()
    const stalled = late
      .tool({ name: "pay", binding: permissive }, async (_a: { amount: number }, tx) => {
        await woken.done
        return tx.sideEffect(async () => {
          effects++
          // Inside its effect, the late owner lets the takeover land, and finishes after it.
          gate.open()
          await redispatchSettled.done
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
      .finally(redispatchSettled.fire)
    await gate.arrived
    woken.fire()
    // Refused, the late owner never reaches its effect: the takeover goes ahead alone.
    await Promise.race([stalled, new Promise((r) => setTimeout(r, 50))])
    gate.open()
    await Promise.all([stalled, redispatched])
    expect(effects).toBe(1)
  })

  it("a redispatch blocking a lapsed row never writes not_crossed over a late owner's boundary move", async () => {
    // The late owner's clock runs behind: in its view the lease still holds, so it may start its effect.
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    const gate = gatedStore(
      rows,
      (method, a) => method === "tryTransition" && (a[0] as LedgerEntry).terminalOutcome === "BLOCKED",
    )
    const late = new ActionLedger({ ...options, clock: new ManualClock(), storage: rows })
    const redispatcher = new ActionLedger({ ...options, clock, storage: gate.store })
    const strict = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
    const woken = signal()
    const stalled = late
      .tool({ name: "pay", binding: strict }, async (_a: { amount: number }, tx) => {
        await woken.done
        return tx.sideEffect(async () => {
          gate.open()
          return 1
        })
      })({ amount: 1 }, { requestId: "r3" })
      .catch((e: unknown) => e)
    while (!(await rows.get("r3"))) await new Promise((r) => setTimeout(r, 1))
    clock.advance(11)
    const redispatched = redispatcher
      .tool({ name: "pay", binding: strict }, async () => 2)({ amount: 1 }, { requestId: "r3" })
      .catch((e: unknown) => e)
    await gate.arrived
    woken.fire()
    // The block lost to the boundary move and the redispatch looked again: it blocks on the row as it now is, or
    // replays the late owner's result if that landed first. Its own body never runs.
    const answer = await redispatched
    if (answer !== 1) expect(answer).toMatchObject({ code: "ledger_hard_block" })
    await stalled
    expect((await rows.get("r3"))?.sideEffectBoundary).not.toBe("not_crossed")
  })

  it("an operator's not_executed release, judged on a not_crossed row, is refused once the late owner crossed", async () => {
    const clock = new ManualClock()
    const rows = new MemoryLedgerStorage()
    const gate = gatedStore(rows, (method) => method === "tryTransition")
    const late = new ActionLedger({ ...options, clock: new ManualClock(), storage: rows })
    const operator = new ActionLedger({ ...options, clock, storage: gate.store })
    const guard = await claimed(late, "r4")
    clock.advance(11)
    const release = operator
      .release("r4", {
        verified: "not_executed",
        by: "ops",
        reason: "no charge found",
        overrideDeathSignal: "host gone",
      })
      .catch((e: unknown) => e)
    await gate.arrived
    await late.advanceBoundary("r4", "maybe_crossed", guard)
    gate.open()
    expect(await release).toMatchObject({ code: "ledger_already_resolved" })
    expect((await rows.get("r4"))?.sideEffectBoundary).toBe("maybe_crossed")
    expect((await rows.get("r4"))?.operatorResolution).toBeNull()
  })
})
