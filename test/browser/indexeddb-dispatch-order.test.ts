// The IndexedDB ledger's dispatch siblings in Chromium, first claimed first. The index on kwargs.tool_call_id gave them
// in primary-key order, and the drift gate acts on the first: it names the prior request in its refusal and, under
// onArgsDrift "hard", picks the error. The memory and Durable Object stores give them in the order they were claimed.
import { describe, expect, it } from "vitest"
import { type LedgerStorage, newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { ActionLedger, LedgerIdentityConflictError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { ManualClock } from "../../src/core/ledger/clock.ts"

let n = 0
const fresh = () => `mycelium-dispatch-order-${Date.now()}-${n++}`

async function withIdb<T>(f: (s: IndexedDbLedgerStorage) => Promise<T>): Promise<T> {
  const dbName = fresh()
  const idb = new IndexedDbLedgerStorage({ dbName })
  try {
    return await f(idb)
  } finally {
    await idb.close()
    indexedDB.deleteDatabase(dbName)
  }
}

describe("IndexedDB dispatch siblings", () => {
  it("findByDispatchId gives the rows in first-claimed order, as the memory store does", async () => {
    // Claimed one after another, as the ledger stamps them: started_at is the claim's time.
    const order = async (s: LedgerStorage) => {
      const row = (id: string, at: number) =>
        newEntry({ requestId: id, tool: "t", kwargs: { tool_call_id: "d1" } }, at)
      for (const [id, at] of [
        ["z", 1],
        ["m", 2],
        ["a", 3],
      ] as const)
        await s.tryClaimInflight(row(id, at), 60, 100, { reclaimFence: null, dispatchId: "d1" })
      return (await s.findByDispatchId?.("d1"))?.map((e) => e.requestId)
    }
    const expected = await order(new MemoryLedgerStorage())
    expect(expected).toEqual(["z", "m", "a"])
    // Before: ["a", "m", "z"], the index's key order.
    expect(await withIdb(order)).toEqual(expected)
  })

  it("a drifted re-send under a reused tool-call id is refused naming the first request claimed under it", async () => {
    const names = async (storage: LedgerStorage) => {
      const clock = new ManualClock()
      const ledger = new ActionLedger({ storage, clock, onWarning: () => {} })
      const send = ledger.tool(
        {
          name: "send",
          binding: { agentId: "a", policyVersion: "p", sideEffectClass: "non_idempotent_mutate" },
        },
        async (a: { to: string }) => a.to,
      )
      expect(await send({ to: "x" }, { toolCallId: "tc-1", requestId: "z-first" })).toBe("x")
      const refusals: Array<string | null> = []
      for (const requestId of ["m-second", "a-third"]) {
        clock.advance(1)
        const e = await send({ to: requestId }, { toolCallId: "tc-1", requestId }).catch((x: unknown) => x)
        expect(e).toBeInstanceOf(LedgerIdentityConflictError)
        refusals.push((e as LedgerIdentityConflictError).priorRequestId)
      }
      return refusals
    }
    const expected = await names(new MemoryLedgerStorage())
    expect(expected).toEqual(["z-first", "z-first"])
    // Before: the third was refused naming "m-second" (the first in key order after its own).
    expect(await withIdb(names)).toEqual(expected)
  })
})
