// IndexedDB race checks shared by the Node (fake-indexeddb) and Chromium runs.
import { expect, it } from "vitest"
import { LedgerStorageUnavailableError, newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { IndexedDbTaskStore } from "../../src/adapters/indexeddb-guards.ts"
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

/** Opens `dbName` at `version` with no `versionchange` handler: the connection other code of the page may hold. */
function openForeign(dbName: string, version: number, onVersionChange?: (db: IDBDatabase) => void) {
  return new Promise<IDBDatabase>((resolve, reject) => {
    const req = indexedDB.open(dbName, version)
    req.onupgradeneeded = () => req.result.createObjectStore(`other-${version}`)
    req.onsuccess = () => {
      if (onVersionChange) req.result.onversionchange = () => onVersionChange(req.result)
      resolve(req.result)
    }
    req.onerror = () => reject(req.error)
  })
}

/** `p`'s outcome, or a rejection naming `what` once `ms` passed: the old adapter hung here. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms),
    ),
  ])
}

function sendTool(storage: LedgerStorage, runs: { n: number }) {
  return new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} }).tool(
    { name: "send_payment", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
    async (args: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs.n++
        return { id: `pi_${runs.n}`, amount: args.amount }
      }),
  )
}

export function idbBlockedUpgrade(freshName: () => string): void {
  it("16 ledger stores and the task store opened at once on one fresh database all open", async () => {
    const dbName = freshName()
    const stores = Array.from(
      { length: 16 },
      (_, i) => new IndexedDbLedgerStorage({ dbName, storeName: `s${i}` }),
    )
    const tasks = new IndexedDbTaskStore({ dbName })
    const r = await Promise.allSettled([...stores.map((s) => s.get("x")), tasks.get("x")])
    expect(r.filter((x) => x.status === "rejected")).toEqual([])
    await Promise.all([...stores.map((s) => s.close()), tasks.close()])
  })

  it("an upgrade blocked by a connection that never closes fails closed; the call after it closes runs once", async () => {
    const dbName = freshName()
    const foreign = await openForeign(dbName, 1)
    const storage = new IndexedDbLedgerStorage({ dbName, blockedTimeout: 0.2 })
    const runs = { n: 0 }
    const send = sendTool(storage, runs)
    const call = () => send({ amount: 100 }, { toolCallId: "call_blocked" })

    const t0 = Date.now()
    const err = await within(call(), 5000, "blocked call").catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((err as Error).message).toContain(`'${dbName}'`)
    expect((err as Error).message).toContain("version 2")
    expect(Date.now() - t0).toBeLessThan(4000)
    expect(runs.n).toBe(0)
    // The blocked upgrade request cannot be cancelled; a call while it waits is queued behind it and must fail
    // closed too, not hang.
    const again = await within(call(), 5000, "call queued behind the blocked upgrade").catch(
      (e: unknown) => e,
    )
    expect(again).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(runs.n).toBe(0)

    foreign.close()
    expect(await within(call(), 5000, "call after the foreign connection closed")).toEqual({
      id: "pi_1",
      amount: 100,
    })
    expect(runs.n).toBe(1)
    const rows = []
    for await (const e of storage.list()) rows.push(e)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.terminalOutcome).toBe("COMPLETED")

    // Nothing of the adapter's is left holding the database: the late upgrade connection was closed, the live one
    // closes on versionchange, so a further upgrade is never blocked.
    let blocked = 0
    const next = await within(
      new Promise<IDBDatabase>((resolve, reject) => {
        const req = indexedDB.open(dbName, 3)
        req.onblocked = () => blocked++
        req.onsuccess = () => resolve(req.result)
        req.onerror = () => reject(req.error)
      }),
      5000,
      "a further versioned open",
    )
    expect(blocked).toBe(0)
    expect(next.version).toBe(3)
    next.close()
    await storage.close()
  })

  it("a connection that closes on versionchange within the grace does not fail the call", async () => {
    const dbName = freshName()
    let asked = 0
    await openForeign(dbName, 1, (db) => {
      asked++
      setTimeout(() => db.close(), 100)
    })
    const storage = new IndexedDbLedgerStorage({ dbName, blockedTimeout: 3 })
    const runs = { n: 0 }
    const result = await within(
      sendTool(storage, runs)({ amount: 7 }, { toolCallId: "call_grace" }),
      5000,
      "call",
    )
    expect(result).toEqual({ id: "pi_1", amount: 7 })
    expect(runs.n).toBe(1)
    expect(asked).toBe(1)
    await storage.close()
  })

  it("the guard stores' open queued behind a blocked deletion fails closed, and opens once it is done", async () => {
    const dbName = freshName()
    const foreign = await openForeign(dbName, 1)
    // A deletion the foreign connection blocks: every open queued after it waits for it.
    let deleted = false
    const deletion = indexedDB.deleteDatabase(dbName)
    deletion.onsuccess = () => {
      deleted = true
    }
    const tasks = new IndexedDbTaskStore({ dbName, blockedTimeout: 0.2 })
    const t0 = Date.now()
    const err = await within(tasks.get("t-1"), 5000, "task store open").catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((err as Error).message).toContain(`'${dbName}'`)
    expect(Date.now() - t0).toBeLessThan(4000)
    expect(deleted).toBe(false)
    foreign.close()
    expect(await within(tasks.get("t-1"), 5000, "task store after the deletion")).toBeNull()
    expect(deleted).toBe(true)
  })
}
