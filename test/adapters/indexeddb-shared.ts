// IndexedDB race checks shared by the Node (fake-indexeddb) and Chromium runs.
import { expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"

/** One redispatch: claim, and only the winner "executes" and completes. */
async function redispatch(s: LedgerStorage, id: string, owner: string, executed: string[]): Promise<string> {
  const now = Date.now() / 1000
  const r = await s.tryClaimInflight(newEntry({ requestId: id, tool: "send", owner }, now), 60, now)
  if (r.outcome !== "claimed") return r.outcome
  executed.push(owner)
  const ok = await s.tryTransition(
    { ...r.entry, terminalOutcome: "COMPLETED", status: "completed", result: owner },
    { outcomes: ["IN_FLIGHT"], owner, fence: r.entry.fence },
  )
  if (!ok) throw new Error("winner lost its own completion")
  return "claimed"
}

export function idbRaceOneExecution(freshName: () => string): void {
  it("two connections x 50 concurrent redispatches: one execution", async () => {
    const dbName = freshName()
    const a = new IndexedDbLedgerStorage({ dbName })
    const b = new IndexedDbLedgerStorage({ dbName })
    // Both connections are open before the storm, so the race is between connections, not between opens.
    await Promise.all([a.get("warm"), b.get("warm")])
    const executed: string[] = []
    const id = `race-${dbName}`
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) => redispatch(i % 2 ? b : a, id, `w${i}`, executed)),
    )
    expect(executed).toHaveLength(1)
    expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1)
    const stored = await b.get(id)
    expect(stored?.terminalOutcome).toBe("COMPLETED")
    expect(stored?.result).toBe(executed[0])
    await a.close()
    await b.close()
  })

  it("ledger.tool() on two connections x 50 concurrent redispatches: one execution, one shared result", async () => {
    const dbName = freshName()
    const connections = [new IndexedDbLedgerStorage({ dbName }), new IndexedDbLedgerStorage({ dbName })]
    let executions = 0
    const tools = connections.map((storage, i) =>
      new ActionLedger({
        storage,
        leaseTtl: 60,
        pollInterval: 0.005,
        owner: `tab${i}`,
        onWarning: () => {},
      }).tool(
        {
          name: "send_payment",
          binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
        },
        async (args: { amount: number }, tx) =>
          tx.sideEffect(async () => {
            executions++
            return { id: `pi_${executions}`, amount: args.amount }
          }),
      ),
    )
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => tools[i % 2]?.({ amount: 100 }, { toolCallId: "call_abc" })),
    )
    expect(executions).toBe(1)
    for (const r of results) expect(r).toEqual({ id: "pi_1", amount: 100 })
    for (const c of connections) await c.close()
  })
}
