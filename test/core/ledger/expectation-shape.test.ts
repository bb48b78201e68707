// A holder's compare-and-sets all carry one expectation shape. Each write once spread its own extra fields, every
// store's check on the hot path went megamorphic, and a fresh call with sideEffect() took 13.3 µs instead of 9.2
// (bench/ledger.bench.ts, bundled); no timed test could say so without flaking, the shape can.

import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  MemoryLedgerStorage,
  type TransitionExpectation,
} from "../../../src/core/index.ts"

class RecordingStore extends MemoryLedgerStorage {
  readonly shapes: string[] = []
  override tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    this.shapes.push(Object.keys(expect).join(","))
    return super.tryTransition(next, expect)
  }
}

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const
const allowed = { allowed: true, verdicts: [], deniedReasons: [] }

describe("holder writes", () => {
  it("present one expectation shape to the store, whatever the write", async () => {
    const storage = new RecordingStore()
    const ledger = new ActionLedger({ storage, leaseRenewInterval: 0, onWarning: () => {} })
    const pay = ledger.tool({ name: "pay", binding }, async (_a: { n: number }, tx) => {
      await tx.renewLease()
      return tx.sideEffect(() => ({ ok: true }))
    })
    await pay({ n: 1 }, { toolCallId: "c1" })
    const fails = ledger.tool({ name: "pay", binding }, async (_a: { n: number }) => {
      throw new Error("declined")
    })
    await expect(fails({ n: 2 }, { toolCallId: "c2" })).rejects.toThrow("declined")

    // A manual claim starts in phase INTENDED: a decision, then the effect's writes (phase ATTEMPTING).
    const c = await ledger.claim({
      tool: "pay",
      args: { n: 3 },
      binding,
      meta: { requestId: "r3" },
    })
    const guard = { fence: c.entry.fence, owner: c.entry.owner }
    await ledger.recordDecision("r3", allowed, guard)
    await ledger.attachExternalOperationRef("r3", "op_1", guard)
    await ledger.markUnknown("r3", "timed out", guard)

    // renewal, boundary, completion, failure, decision, ref, unknown: none went by without a check
    expect(storage.shapes.length).toBeGreaterThanOrEqual(7)
    expect(new Set(storage.shapes)).toEqual(
      new Set(["outcomes,owner,fence,effectPhase,sideEffectBoundary,leaseHeldAt"]),
    )
  })
})
