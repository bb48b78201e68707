// A boundary write whose answer comes back after the lease lapsed (a slow store, a GC pause): the store checked the
// lease at the time the owner read before writing, so the write lands, but the owner must not start its effect on
// the answer. Found by the model test with time passing inside store calls (model-random.test.ts): the owner's
// silence outlived presumedDeadAfter, an operator released `not_executed` from the provider's records, a redispatch
// charged, and then the owner's answer arrived and it charged too.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerHardBlockError,
  LedgerLeaseError,
  type LedgerStorage,
  MemoryLedgerStorage,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const ID = "charge:7"

/**
 * The store answers `slow`'s boundary write (after `skip` such writes) only when `answer()` is called: written at
 * once, answered late.
 */
function slowAnswer(rows: MemoryLedgerStorage, moveBeforeWrite: () => void, skip = 0) {
  let answer!: () => void
  const answered = new Promise<void>((r) => {
    answer = r
  })
  let written!: () => void
  const landed = new Promise<void>((r) => {
    written = r
  })
  const store: LedgerStorage = {
    get: (id) => rows.get(id),
    set: (e) => rows.set(e),
    tryClaimInflight: (e, ttl, now, o) => rows.tryClaimInflight(e, ttl, now, o),
    list: (o) => rows.list(o),
    async tryTransition(next, expect) {
      const slow = next.owner === "slow" && next.sideEffectBoundary === "maybe_crossed" && skip-- <= 0
      if (slow) moveBeforeWrite()
      const ok = await rows.tryTransition(next, expect)
      if (!slow) return ok
      written()
      await answered
      return ok
    },
  }
  return { store, landed, answer }
}

/** `retry`: the body's first sideEffect() fails before its effect (a refused connection), and it tries once more. */
function world(moveBeforeWrite: (clock: ManualClock) => void, retry = false) {
  const clock = new ManualClock()
  const rows = new MemoryLedgerStorage()
  const slow = slowAnswer(rows, () => moveBeforeWrite(clock), retry ? 1 : 0)
  const effects: string[] = []
  const common = { clock, leaseTtl: 10, presumedDeadAfter: 60, pollTimeout: 1, leaseRenewInterval: 0 }
  const mk = (owner: string, storage: LedgerStorage) =>
    new ActionLedger({ ...common, storage, owner, onWarning: () => {} }).tool(
      { name: "charge", binding },
      async (_a: { amount: number }, tx) => {
        if (retry && owner === "slow")
          await tx
            .sideEffect(() => {
              throw new Error("connection refused")
            })
            .catch(() => {})
        return tx.sideEffect(() => {
          effects.push(owner)
          return `ch-${owner}`
        })
      },
    )
  const ops = new ActionLedger({ ...common, storage: rows, owner: "ops", onWarning: () => {} })
  return { clock, rows, slow, effects, owner: mk("slow", slow.store), other: mk("other", rows), ops }
}

describe("a boundary write answered after the lease lapsed", () => {
  for (const when of ["after the store wrote", "before the store wrote"] as const) {
    it(`time passes ${when}: the owner never starts its effect, so a verdict from the provider's records holds`, async () => {
      // Before: the store writes with the lease the owner checked when it built the write (its clock then).
      const w = world((clock) => {
        if (when === "before the store wrote") clock.advance(30)
      })
      const late = w.owner({ amount: 5 }, { requestId: ID }).then(
        (v) => v,
        (e: unknown) => e,
      )
      await w.slow.landed
      expect(await w.rows.get(ID)).toMatchObject({ sideEffectBoundary: "maybe_crossed", owner: "slow" })
      // 70 s after the claim: the lease lapsed and the owner is silent past presumedDeadAfter.
      w.clock.advance(when === "before the store wrote" ? 40 : 70)

      await expect(w.other({ amount: 5 }, { requestId: ID })).rejects.toBeInstanceOf(LedgerHardBlockError)
      // The provider has no charge, and the silence is the death signal: the operator may release not_executed.
      await w.ops.release(ID, { verified: "not_executed", by: "ops", reason: "provider has no charge" })
      expect(await w.other({ amount: 5 }, { requestId: ID })).toBe("ch-other")

      w.slow.answer()
      const refused = await late
      expect(w.effects).toEqual(["other"])
      expect(refused).toBeInstanceOf(LedgerLeaseError)
      expect(await w.rows.get(ID)).toMatchObject({ terminalOutcome: "COMPLETED", result: "ch-other" })
    })
  }

  it("answered in time, the effect runs once and completes", async () => {
    const w = world(() => {})
    const call = w.owner({ amount: 5 }, { requestId: ID })
    await w.slow.landed
    w.clock.advance(9)
    w.slow.answer()
    expect(await call).toBe("ch-slow")
    expect(w.effects).toEqual(["slow"])
  })

  it("answered after the lease lapsed with nobody else there, the row is UNKNOWN: ambiguous, never re-run blind", async () => {
    const w = world(() => {})
    const late = w.owner({ amount: 5 }, { requestId: ID }).catch((e: unknown) => e)
    await w.slow.landed
    w.clock.advance(10)
    w.slow.answer()
    expect(await late).toBeInstanceOf(LedgerLeaseError)
    expect(w.effects).toEqual([])
    expect(await w.rows.get(ID)).toMatchObject({
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
      fence: 1,
    })
    await expect(w.other({ amount: 5 }, { requestId: ID })).rejects.toBeInstanceOf(LedgerHardBlockError)
  })

  it("a second sideEffect() (a retry after an attempt that failed before its effect) is held to the lease too", async () => {
    const w = world(() => {}, true)
    const late = w.owner({ amount: 5 }, { requestId: ID }).catch((e: unknown) => e)
    await w.slow.landed
    w.clock.advance(70)
    await expect(w.other({ amount: 5 }, { requestId: ID })).rejects.toBeInstanceOf(LedgerHardBlockError)
    // The provider has no charge: the first attempt never reached it.
    await w.ops.release(ID, { verified: "not_executed", by: "ops", reason: "provider has no charge" })
    expect(await w.other({ amount: 5 }, { requestId: ID })).toBe("ch-other")
    w.slow.answer()
    expect(await late).toBeInstanceOf(LedgerLeaseError)
    expect(w.effects).toEqual(["other"])
  })
})
