// One holder, two writes at once: a lease renewal (or a provider ref) built on the row as it was read, and a boundary
// move that lands between that read and its write. The late write used to put the boundary back to not_crossed, so a
// failure after the effect was recorded as FAILED_BEFORE_EFFECT and a redispatch with safe_retry paid again.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  type LedgerStorage,
  MemoryLedgerStorage,
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
