// A late owner that crossed its boundary and whose row was then taken over (the new attempt is back at
// not_crossed) records its failure: the write must fail once (docs/kill-safety.md, "the late owner's fenced writes
// fail"), not be made again over a boundary that only a new owner lowered. It looped without end: on the memory
// store the event loop never got another turn, on Redis it was hundreds of round trips a second.
import { describe, expect, it } from "vitest"
import type { LedgerEntry, TransitionExpectation } from "../../../src/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/index.ts"
import { ManualClock } from "../../../src/testing.ts"

class CountingStorage extends MemoryLedgerStorage {
  tries = 0
  override async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    // A bound so the old code fails the test instead of hanging it.
    if (++this.tries > 1000) throw new Error("tryTransition storm")
    return super.tryTransition(next, expect)
  }
}

const tick = () => new Promise((r) => setTimeout(r, 10))

describe("a late owner's failure after a takeover", () => {
  it("fails once (the caller gets its body's error) and leaves the new owner's row alone", async () => {
    const clock = new ManualClock()
    const storage = new CountingStorage()
    const warnings: string[] = []
    const mk = (owner: string) =>
      new ActionLedger({
        storage,
        clock,
        owner,
        leaseTtl: 30,
        leaseRenewInterval: 0,
        onWarning: (m) => warnings.push(String(m)),
      })
    const [a, b] = [mk("worker-a"), mk("worker-b")]
    let wakeA!: () => void
    const stalled = new Promise<void>((r) => {
      wakeA = r
    })
    let finishB!: () => void
    const bWorking = new Promise<void>((r) => {
      finishB = r
    })
    const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "read" } as const
    const toolA = a.tool({ name: "lookup", binding }, async (_args: { q: string }, tx) => {
      await tx.sideEffect(async () => {
        await stalled
        throw new Error("provider timeout")
      })
      return { who: "a" }
    })
    const toolB = b.tool({ name: "lookup", binding }, async (_args: { q: string }) => {
      await bWorking
      return { who: "b" }
    })

    const first = toolA({ q: "x" }, { requestId: "lookup:1" })
    const firstSettled = first.then(
      () => "resolved",
      (e: unknown) => e,
    )
    await tick()
    expect((await storage.get("lookup:1"))?.sideEffectBoundary).toBe("maybe_crossed")
    clock.advance(31)
    const second = toolB({ q: "x" }, { requestId: "lookup:1" })
    await tick()
    const taken = await storage.get("lookup:1")
    expect([taken?.fence, taken?.owner, taken?.sideEffectBoundary]).toEqual([2, "worker-b", "not_crossed"])

    const before = storage.tries
    wakeA()
    const outcome = await firstSettled
    expect(storage.tries - before).toBeLessThanOrEqual(3)
    expect((outcome as Error).message).toBe("provider timeout")
    expect(warnings.some((w) => w.includes("fence is 2, expected 1"))).toBe(true)
    const row = await storage.get("lookup:1")
    expect([row?.fence, row?.owner, row?.terminalOutcome]).toEqual([2, "worker-b", "IN_FLIGHT"])

    finishB()
    await expect(second).resolves.toEqual({ who: "b" })
  })
})
