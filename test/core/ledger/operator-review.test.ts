// An operator following the docs for a killed payment worker: a row on an unbounded lease (leaseTtl 0) can be
// settled (by force, once its worker is marked dead), and the refusals on the way name actions in words any surface
// maps (the CLI and HTTP layers add their own spelling), never one surface's option names.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerReleaseRefusedError,
  LedgerWorkerAliveError,
  MemoryLedgerStorage,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const T0 = 1_767_225_600
const ID = "pay:1"

/** Worker A claims `ID` on a ledger with lease `leaseTtl` and is "killed" inside its effect (it never returns). */
async function killedInsideEffect(leaseTtl: number) {
  const clock = new ManualClock(T0)
  const storage = new MemoryLedgerStorage()
  const effects: string[] = []
  const mk = (owner: string) =>
    new ActionLedger({ storage, clock, owner, leaseTtl, pollTimeout: 0, onWarning: () => {} })
  const pay = (who: string) =>
    mk(who).tool({ name: "pay", binding }, async (args: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        effects.push(who)
        if (who === "A") await new Promise(() => {})
        return { paid: args.amount, by: who }
      }),
    )
  void pay("A")({ amount: 5 }, { requestId: ID })
  for (let i = 0; i < 50 && effects.length === 0; i++) await new Promise((r) => setTimeout(r, 5))
  expect((await storage.get(ID))?.sideEffectBoundary).toBe("maybe_crossed")
  return { clock, storage, effects, ops: mk("ops"), pay }
}

const verdict = { by: "ops", reason: "no charge at the provider" }

describe("release of an IN_FLIGHT row on an unbounded lease", () => {
  it("an operator's ledger with a bounded lease does not read the unbounded row's silence as death", async () => {
    const w = await killedInsideEffect(0)
    // The CLI's and the edge API's ledgers lease 3600 s: presumedDeadAfter 7200 s is their policy, not the row's.
    const cli = new ActionLedger({ storage: w.storage, clock: w.clock, owner: "cli", onWarning: () => {} })
    w.clock.advance(3 * 3600)
    await expect(cli.markWorkerDeadFor(ID, { by: "ops", reason: "silent" })).rejects.toBeInstanceOf(
      LedgerWorkerAliveError,
    )
    expect((await w.storage.get(ID))?.workerDeadAssertedAt).toBeNull()
  })

  it("markWorkerDeadFor without an override says only the override marks it dead, never to wait", async () => {
    const w = await killedInsideEffect(0)
    w.clock.advance(3 * 86_400)
    const refused = await w.ops
      .markWorkerDeadFor(ID, { by: "ops", reason: "pod gone" })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LedgerWorkerAliveError)
    expect((refused as Error).message).toContain("Only a heartbeat override marks it dead")
    expect((refused as Error).message).not.toMatch(/grace window|Wait/)
  })

  it("is refused without force or without an asserted death; with both, not_executed lets one redispatch run it", async () => {
    const w = await killedInsideEffect(0)
    w.clock.advance(86_400) // a day: an unbounded lease never lapses, silence never counts as death
    expect((await w.storage.get(ID))?.leaseUntil).toBeNull()
    const notExecuted = { verified: "not_executed", ...verdict } as const

    const noForce = await w.ops.release(ID, notExecuted).catch((e: unknown) => e)
    expect(noForce).toBeInstanceOf(LedgerReleaseRefusedError)
    expect((noForce as Error).message).toContain("mark its worker dead, then release with force")
    // force alone is not a death signal.
    await expect(w.ops.release(ID, { ...notExecuted, force: true })).rejects.toBeInstanceOf(
      LedgerReleaseRefusedError,
    )
    // Marking it dead follows mark-dead's own rules: no silence counts on an unbounded lease, so an override.
    await expect(w.ops.markWorkerDeadFor(ID, { by: "ops", reason: "pod deleted" })).rejects.toBeInstanceOf(
      LedgerWorkerAliveError,
    )
    await w.ops.markWorkerDeadFor(ID, { by: "ops", reason: "pod deleted", overrideHeartbeat: true })
    // The death alone is not force either.
    await expect(w.ops.release(ID, notExecuted)).rejects.toBeInstanceOf(LedgerReleaseRefusedError)
    expect((await w.storage.get(ID))?.operatorResolution).toBeNull()

    const released = await w.ops.release(ID, { ...notExecuted, force: true })
    expect(released).toMatchObject({
      operatorResolution: "not_executed",
      releasedFromOutcome: "IN_FLIGHT",
      terminalOutcome: "BLOCKED",
      fence: 2,
    })
    // The redispatch runs it exactly once more; the next one replays that result.
    await expect(w.pay("B")({ amount: 5 }, { requestId: ID })).resolves.toEqual({ paid: 5, by: "B" })
    await expect(w.pay("C")({ amount: 5 }, { requestId: ID })).resolves.toEqual({ paid: 5, by: "B" })
    expect(w.effects).toEqual(["A", "B"])
  })

  it("completed (forced, on an asserted death) stores the result the redispatch returns", async () => {
    const w = await killedInsideEffect(0)
    await w.ops.markWorkerDeadFor(ID, { by: "ops", reason: "pod deleted", overrideHeartbeat: true })
    const done = await w.ops.release(ID, {
      verified: "completed",
      result: { paid: 5, by: "A" },
      ...verdict,
      force: true,
    })
    expect(done).toMatchObject({ operatorResolution: "completed", releasedFromOutcome: "IN_FLIGHT" })
    await expect(w.pay("B")({ amount: 5 }, { requestId: ID })).resolves.toEqual({ paid: 5, by: "A" })
    expect(w.effects).toEqual(["A"])
  })

  it("a bounded live lease stays refused, force and death notwithstanding", async () => {
    const w = await killedInsideEffect(600)
    await w.ops.markWorkerDeadFor(ID, { by: "ops", reason: "pod deleted", overrideHeartbeat: true })
    const refused = await w.ops
      .release(ID, { verified: "not_executed", ...verdict, force: true })
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(LedgerReleaseRefusedError)
    expect((refused as Error).message).toContain("release it once EXPIRED")
    expect((await w.storage.get(ID))?.operatorResolution).toBeNull()
  })
})

describe("refusals name the action, not one surface's option", () => {
  it("mark-dead's refusal says what it refused and offers a heartbeat override; release's offers a death signal", async () => {
    const w = await killedInsideEffect(2)
    w.clock.advance(3) // lapsed, heartbeat 3 s old: well inside presumedDeadAfter (4 s)
    const dead = await w.ops.markWorkerDeadFor(ID, { by: "ops", reason: "gone" }).catch((e: unknown) => e)
    expect(dead).toBeInstanceOf(LedgerWorkerAliveError)
    const m = (dead as Error).message
    expect(m).toMatch(/^Cannot mark worker dead for request 'pay:1': EXPIRED but worker 'A' appears alive/)
    expect(m).toContain("heartbeat override")
    expect(m).not.toContain("overrideHeartbeat")
    expect(m).not.toContain("Cannot release")

    const rel = await w.ops.release(ID, { verified: "not_executed", ...verdict }).catch((e: unknown) => e)
    expect(rel).toBeInstanceOf(LedgerWorkerAliveError)
    const r = (rel as Error).message
    expect(r).toMatch(/^Cannot release request 'pay:1': EXPIRED but worker 'A' appears alive/)
    expect(r).toContain("mark the worker dead")
    expect(r).toContain("death-signal override")
    expect(r).not.toContain("markWorkerDeadFor")
    expect(r).not.toContain("overrideDeathSignal")
  })
})
