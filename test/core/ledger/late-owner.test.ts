// A live owner that stalls past its lease (no renewals) must never perform its effect after an operator said
// "not executed": the release waits for the owner's death signal, and the fence check at sideEffect() entry
// refuses the woken owner before its effect function runs.

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileLedgerStorage } from "../../../src/adapters/file.ts"
import {
  ActionLedger,
  LedgerHardBlockError,
  LedgerOutcomeAlreadySetError,
  LedgerReleaseRefusedError,
  type LedgerStorage,
  LedgerWorkerAliveError,
  leaseLapsed,
  MemoryLedgerStorage,
  ReconcileResult,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-late-owner-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const stores: Array<[string, () => LedgerStorage]> = [
  ["memory", () => new MemoryLedgerStorage()],
  ["file", () => new FileLedgerStorage(join(dir, `l${n++}.json`))],
]
const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const ID = "charge:42"

function gate() {
  let open!: () => void
  const opened = new Promise<void>((r) => {
    open = r
  })
  return { open, opened }
}

/** An owner that claims, then stalls (no lease renewals) until `wake`, then tries its effect. */
function world(storage: LedgerStorage) {
  const clock = new ManualClock()
  const common = { storage, clock, leaseTtl: 10, presumedDeadAfter: 60, pollTimeout: 1, onWarning: () => {} }
  const effects: string[] = []
  const stall = gate()
  const claimed = gate()
  const mk = (owner: string, hold: boolean) => {
    const ledger = new ActionLedger({ ...common, owner, leaseRenewInterval: 0 })
    const tool = ledger.tool({ name: "charge", binding }, async (_a: { amount: number }, tx) => {
      if (hold) {
        claimed.open()
        await stall.opened
      }
      return tx.sideEffect(() => {
        effects.push(owner)
        return `ch-${owner}`
      })
    })
    return { ledger, tool }
  }
  const slow = mk("slow", true)
  const other = mk("redispatcher", false)
  return { clock, effects, slow, other, stall, claimed, operator: other.ledger }
}

const release = { verified: "not_executed", by: "ops", reason: "provider has no charge" } as const

for (const [kind, open] of stores) {
  describe(`late owner (${kind} store)`, () => {
    it("redispatch hard-blocks a lapsed lease; not_executed is refused until the owner is marked dead; the woken owner cannot cross the boundary or record", async () => {
      const storage = open()
      const w = world(storage)
      const late = w.slow.tool({ amount: 5 }, { requestId: ID }).then(
        () => "returned",
        (e: unknown) => e,
      )
      await w.claimed.opened
      w.clock.advance(11) // past the 10 s lease, well inside presumedDeadAfter (60 s)

      await expect(w.other.tool({ amount: 5 }, { requestId: ID })).rejects.toBeInstanceOf(
        LedgerHardBlockError,
      )
      const blocked = await storage.get(ID)
      expect(blocked).toMatchObject({ terminalOutcome: "BLOCKED", owner: "slow", fence: 1 })
      expect(leaseLapsed(blocked as NonNullable<typeof blocked>, w.clock.now())).toBe(true)

      // The gate applies without reclaimRequiresDeathSignal; the refusal names all three missing signals.
      const refused = await w.operator.release(ID, release).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(LedgerWorkerAliveError)
      const msg = (refused as Error).message
      for (const s of ["heartbeat silence", "mark the worker dead", "death-signal override", "'slow'"])
        expect(msg).toContain(s)
      expect((await storage.get(ID))?.operatorResolution).toBeNull()
      // `completed` cannot cause a second run, so it is not gated (not used here: the row stays releasable).

      // markWorkerDeadFor accepts the BLOCKED row (it has a worker), but needs evidence or an explicit override.
      await expect(
        w.operator.markWorkerDeadFor(ID, { by: "ops", reason: "pod gone" }),
      ).rejects.toBeInstanceOf(LedgerWorkerAliveError)
      await w.operator.markWorkerDeadFor(ID, { by: "ops", reason: "pod gone", overrideHeartbeat: true })
      const released = await w.operator.release(ID, release)
      expect(released).toMatchObject({ operatorResolution: "not_executed", releasedFromOutcome: "BLOCKED" })

      // The owner wakes: the fenced boundary write at sideEffect() entry fails, so its effect never runs.
      w.stall.open()
      expect(await late).toBeInstanceOf(LedgerOutcomeAlreadySetError)
      expect(w.effects).toEqual([])
      // ...and it recorded nothing: the row is exactly as the operator left it.
      expect(await storage.get(ID)).toMatchObject({
        terminalOutcome: "BLOCKED",
        operatorResolution: "not_executed",
        fence: 2,
        sideEffectBoundary: "not_crossed",
      })

      // The release is consumed once: one re-execution, then the stored result.
      expect(await w.other.tool({ amount: 5 }, { requestId: ID })).toBe("ch-redispatcher")
      expect(await w.other.tool({ amount: 5 }, { requestId: ID })).toBe("ch-redispatcher")
      expect(w.effects).toEqual(["redispatcher"])
    })

    it("heartbeat silence past presumedDeadAfter is a death signal; an override must be named", async () => {
      const storage = open()
      const w = world(storage)
      const late = w.slow.tool({ amount: 5 }, { requestId: ID }).catch((e: unknown) => e)
      await w.claimed.opened
      w.clock.advance(11)
      await expect(w.other.tool({ amount: 5 }, { requestId: ID })).rejects.toBeInstanceOf(
        LedgerHardBlockError,
      )
      await expect(w.operator.release(ID, { ...release, overrideDeathSignal: "  " })).rejects.toBeInstanceOf(
        LedgerReleaseRefusedError,
      )
      w.clock.advance(50) // 61 s since the last heartbeat
      expect(await w.operator.release(ID, release)).toMatchObject({ resolutionReason: release.reason })
      w.stall.open()
      expect(await late).toBeInstanceOf(LedgerOutcomeAlreadySetError)
      expect(await w.other.tool({ amount: 5 }, { requestId: ID })).toBe("ch-redispatcher")
      expect(w.effects).toEqual(["redispatcher"])
    })

    it("an EXPIRED row released directly (no redispatch) is blocked in the same write: the late owner is fenced out", async () => {
      const storage = open()
      const w = world(storage)
      const late = w.slow.tool({ amount: 5 }, { requestId: ID }).catch((e: unknown) => e)
      await w.claimed.opened
      w.clock.advance(11)
      await expect(w.operator.release(ID, release)).rejects.toBeInstanceOf(LedgerWorkerAliveError)
      const released = await w.operator.release(ID, {
        ...release,
        overrideDeathSignal: "node drained and deleted",
      })
      expect(released).toMatchObject({
        terminalOutcome: "BLOCKED",
        releasedFromOutcome: "EXPIRED",
        resolutionReason: "provider has no charge (death signal overridden: node drained and deleted)",
      })
      w.stall.open()
      expect(await late).toBeInstanceOf(LedgerOutcomeAlreadySetError)
      expect(w.effects).toEqual([])
      expect(await w.other.tool({ amount: 5 }, { requestId: ID })).toBe("ch-redispatcher")
      expect(w.effects).toEqual(["redispatcher"])
    })
  })
}

describe("every sideEffect() entry is fenced", () => {
  it("a second effect after the row was released as completed never runs", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock()
    const opts = { storage, clock, leaseTtl: 10, leaseRenewInterval: 0, onWarning: () => {} }
    const owner = new ActionLedger({ ...opts, owner: "slow" })
    const operator = new ActionLedger({ ...opts, owner: "ops" })
    const stall = gate()
    const between = gate()
    const effects: string[] = []
    const t = owner.tool({ name: "two_step", binding }, async (_a: object, tx) => {
      await tx.sideEffect(() => effects.push("first"))
      between.open()
      await stall.opened
      await tx.sideEffect(() => effects.push("second"))
      return "done"
    })
    const late = t({}, { requestId: "two:1" }).catch((e: unknown) => e)
    await between.opened
    clock.advance(11)
    await operator.release("two:1", { verified: "completed", result: "ops-verified", by: "ops", reason: "r" })
    stall.open()
    expect(await late).toBeInstanceOf(LedgerOutcomeAlreadySetError)
    expect(effects).toEqual(["first"])
    expect(await storage.get("two:1")).toMatchObject({ terminalOutcome: "COMPLETED", result: "ops-verified" })
  })

  it("happy path write budget: one claim, one boundary write, one completion", async () => {
    const inner = new MemoryLedgerStorage()
    const counts = { claim: 0, cas: 0 }
    const storage: LedgerStorage = {
      get: (id) => inner.get(id),
      set: (e) => inner.set(e),
      tryClaimInflight: (e, ttl, now, o) => {
        counts.claim++
        return inner.tryClaimInflight(e, ttl, now, o)
      },
      tryTransition: (next, e) => {
        counts.cas++
        return inner.tryTransition(next, e)
      },
      list: (o) => inner.list(o),
    }
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const t = ledger.tool({ name: "pay", binding }, async (_a: object, tx) => tx.sideEffect(() => "ok"))
    expect(await t({}, { requestId: "p:1" })).toBe("ok")
    expect(counts).toEqual({ claim: 1, cas: 2 })
  })
})

describe("a reconciler's NOT_EXECUTED on a lapsed lease", () => {
  it("does not re-execute while the owner may be alive inside its effect; the provider's record settles it", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock()
    const provider = new Set<string>()
    const effects: string[] = []
    const opts = {
      storage,
      clock,
      leaseTtl: 10,
      leaseRenewInterval: 0,
      presumedDeadAfter: 60,
      onWarning: () => {},
      reconciler: {
        reconcile: (e: { externalOperationRef: string | null }) =>
          provider.has(e.externalOperationRef ?? "")
            ? ReconcileResult.completed("paid")
            : ReconcileResult.notExecuted(),
      },
    }
    const stall = gate()
    const inside = gate()
    const mk = (owner: string, hold: boolean) =>
      new ActionLedger({ ...opts, owner }).tool({ name: "charge", binding }, async (_a: object, tx) =>
        tx.sideEffect(async () => {
          await tx.recordExternalOperation("pi_1")
          if (hold) {
            inside.open()
            await stall.opened // stalled after the boundary, before the provider saw the call
          }
          provider.add("pi_1")
          effects.push(owner)
          return "paid"
        }),
      )
    const late = mk("slow", true)({}, { requestId: "r:1" })
    await inside.opened
    clock.advance(11)
    const other = mk("redispatcher", false)
    // The provider has no record yet; the owner is alive. Re-executing now would charge twice.
    await expect(other({}, { requestId: "r:1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(effects).toEqual([])
    stall.open()
    expect(await late).toBe("paid") // its completion write is refused (row BLOCKED); the effect happened once
    expect(await other({}, { requestId: "r:1" })).toBe("paid") // the reconciler now sees the charge
    expect(effects).toEqual(["slow"])
  })
})
