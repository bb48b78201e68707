// A row the REPAIR gate must mend but the store will not let it (the store reads a null boundary or outcome
// otherwise than the decoder does, as a row written by hand or by an old writer holds): the claim retried the repair
// at once without end, past pollTimeout, and on the memory store the event loop never ran again.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerRowError,
  MemoryLedgerStorage,
  type TransitionExpectation,
} from "../../../src/core/index.ts"

class CountingStorage extends MemoryLedgerStorage {
  tries = 0
  override async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    if (++this.tries > 1000) throw new Error("tryTransition storm")
    return super.tryTransition(next, expect)
  }
}

describe("a repair the store refuses", () => {
  it("fails with LedgerRowError after a few attempts, and the tool does not run", async () => {
    const storage = new CountingStorage()
    const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
    const ledger = new ActionLedger({ storage, onWarning: () => {}, pollTimeout: 1 })
    const c = await ledger.claim({
      tool: "pay",
      args: {},
      binding,
      decision: { allowed: true, verdicts: [], deniedReasons: [] },
      meta: { requestId: "r" },
    })
    await storage.set({ ...c.entry, sideEffectBoundary: null as never, fence: c.entry.fence + 1 })
    let runs = 0
    const pay = ledger.tool({ name: "pay", binding }, async () => ++runs)
    storage.tries = 0
    const err = await pay({}, { requestId: "r" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerRowError)
    expect((err as LedgerRowError).code).toBe("ledger_row_invalid")
    expect(storage.tries).toBeLessThanOrEqual(3)
    expect(runs).toBe(0)
  })
})
