// The IndexedDB stores as a browser app meets them: tabs (Workers, and connections of one page) on one database,
// other tabs upgrading or deleting it mid-call, transactions aborted or closed under a claim.
import { afterEach, describe, expect, it, vi } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { IndexedDbReceiptStore } from "../../src/adapters/indexeddb-guards.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"

let n = 0
const fresh = () => `mycelium-tabs-${Date.now()}-${n++}`
const NOW = Date.now() / 1000

const claim = (s: LedgerStorage, id: string, owner = "o") =>
  s.tryClaimInflight(newEntry({ requestId: id, tool: "send", owner }, NOW), 60, NOW)

function payTool(storage: LedgerStorage, owner: string, runs: Map<string, number>) {
  return new ActionLedger({ storage, leaseTtl: 60, pollInterval: 0.005, owner, onWarning: () => {} }).tool(
    { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
    async (args: { k: string }, tx) =>
      tx.sideEffect(async () => {
        runs.set(args.k, (runs.get(args.k) ?? 0) + 1)
        await new Promise((r) => setTimeout(r, 2))
        return { k: args.k }
      }),
  )
}

/** Another tab's schema upgrade: one version up, adding a store of its own. Counts `blocked` events. */
function upgradeOnce(dbName: string, blocked: { n: number }): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = indexedDB.open(dbName)
    probe.onerror = () => reject(probe.error)
    probe.onsuccess = () => {
      const v = probe.result.version + 1
      probe.result.close()
      const req = indexedDB.open(dbName, v)
      req.onupgradeneeded = () => req.result.createObjectStore(`other-${v}`)
      req.onblocked = () => blocked.n++
      req.onerror = () => reject(req.error)
      req.onsuccess = () => {
        req.result.close()
        resolve(v)
      }
    }
  })
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("IndexedDB across tabs and connections (Chromium)", () => {
  it("2 Workers and 2 page connections x 200 claims of one request id: one run", async () => {
    const dbName = fresh()
    const id = "pay-once"
    const workers = [0, 1].map(
      () => new Worker(new URL("./indexeddb-claim-worker.ts", import.meta.url), { type: "module" }),
    )
    const fromWorkers = workers.map(
      (w, k) =>
        new Promise<string[]>((resolve, reject) => {
          w.onmessage = (e: MessageEvent<string[]>) => resolve(e.data)
          w.onerror = (e) => reject(new Error(e.message))
          w.postMessage({ dbName, id, n: 50, tag: `worker${k}` })
        }),
    )
    const page = [new IndexedDbLedgerStorage({ dbName }), new IndexedDbLedgerStorage({ dbName })]
    const local = Array.from({ length: 100 }, async (_, i) => {
      const s = page[i % 2] as IndexedDbLedgerStorage
      const r = await claim(s, id, `page${i}`)
      return r.outcome
    })
    const outcomes = [...(await Promise.all(local)), ...(await Promise.all(fromWorkers)).flat()]
    expect(outcomes).toHaveLength(200)
    expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1)
    expect(outcomes.filter((o) => o === "lost")).toEqual([])
    for (const w of workers) w.terminate()
    for (const s of page) await s.close()
  })

  it("300 tool calls over 20 call ids on 3 connections while other tabs upgrade 6 times: each ran once", async () => {
    const dbName = fresh()
    const conns = [0, 1, 2].map(() => new IndexedDbLedgerStorage({ dbName, blockedTimeout: 5 }))
    await Promise.all(conns.map((c) => c.get("warm")))
    const runs = new Map<string, number>()
    const tools = conns.map((s, i) => payTool(s, `tab${i}`, runs))
    const blocked = { n: 0 }
    const calls: Promise<unknown>[] = []
    const upgrades: Promise<number>[] = []
    for (let i = 0; i < 300; i++) {
      const k = `c${i % 20}`
      calls.push((tools[i % 3] as ReturnType<typeof payTool>)({ k }, { toolCallId: k }))
      if (i % 50 === 25) upgrades.push(upgradeOnce(dbName, blocked))
      if (i % 7 === 0) await new Promise((r) => setTimeout(r, 1))
    }
    const results = await Promise.all(calls)
    expect(await Promise.all(upgrades)).toHaveLength(6)
    // The stores' connections close on versionchange: no upgrade was ever blocked by them.
    expect(blocked.n).toBe(0)
    expect(runs.size).toBe(20)
    expect([...runs.values()].every((r) => r === 1)).toBe(true)
    for (const [i, r] of results.entries()) expect(r).toEqual({ k: `c${i % 20}` })
    for (const c of conns) await c.close()
  })

  it("a claim whose transaction aborts after its write leaves no row; the next claim takes it once", async () => {
    const dbName = fresh()
    const s = new IndexedDbLedgerStorage({ dbName })
    const peer = new IndexedDbLedgerStorage({ dbName })
    await s.get("warm")
    const put = IDBObjectStore.prototype.put
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementationOnce(function (
      this: IDBObjectStore,
      value: unknown,
      key?: IDBValidKey,
    ) {
      const req = put.call(this, value, key)
      this.transaction.abort()
      return req
    })
    await expect(claim(s, "r1")).rejects.toMatchObject({ name: "AbortError" })
    expect(await peer.get("r1")).toBeNull()
    const again = await Promise.all([claim(s, "r1", "a"), claim(peer, "r1", "b")])
    expect(again.filter((r) => r.outcome === "claimed")).toHaveLength(1)
    await s.close()
    await peer.close()
  })

  it("close() while 20 claims run: each is claimed with its row, or rejected without one", async () => {
    const dbName = fresh()
    const s = new IndexedDbLedgerStorage({ dbName })
    await s.get("warm")
    const settled = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => {
        const p = claim(s, `c${i}`)
        if (i === 10) void s.close()
        return p
      }),
    )
    const reader = new IndexedDbLedgerStorage({ dbName })
    for (const [i, r] of settled.entries()) {
      const row = await reader.get(`c${i}`)
      if (r.status === "fulfilled") expect(row?.owner).toBe("o")
      else expect(row).toBeNull()
    }
    await reader.close()
    await s.close()
  })

  it("a database deleted under open connections is not blocked, and the stores reopen a fresh one", async () => {
    const dbName = fresh()
    const s = new IndexedDbLedgerStorage({ dbName })
    const receipts = new IndexedDbReceiptStore({ dbName })
    expect((await claim(s, "before")).outcome).toBe("claimed")
    expect(await receipts.list()).toEqual([])
    let blocked = 0
    await new Promise((resolve, reject) => {
      const del = indexedDB.deleteDatabase(dbName)
      del.onblocked = () => blocked++
      del.onsuccess = resolve
      del.onerror = () => reject(del.error)
    })
    expect(blocked).toBe(0)
    expect(await s.get("before")).toBeNull()
    expect((await claim(s, "after")).outcome).toBe("claimed")
    expect(await receipts.list()).toEqual([])
    await s.close()
    await receipts.close()
  })

  it("list() with a fractional limit lists at most its ceiling, never the whole store", async () => {
    const s = new IndexedDbLedgerStorage({ dbName: fresh() })
    for (const id of ["a", "b", "c", "d"]) await claim(s, id)
    const ids = async (limit: number) => {
      const out: string[] = []
      for await (const e of s.list({ limit })) out.push(e.requestId)
      return out
    }
    // getAll() truncates its count, and a count of 0 means "all": limit 0.5 listed all 4 rows.
    expect(await ids(0.5)).toEqual(["a"])
    expect(await ids(1.5)).toEqual(["a", "b"])
    await s.close()
  })
})

describe("IndexedDB receipt store (Chromium)", () => {
  it("an append the store cannot clone stores nothing: the chain's tail does not move without its receipt", async () => {
    const store = new IndexedDbReceiptStore({ dbName: fresh() })
    const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "a" })
    const init = { action: "t", actionKind: "tool", kwargs: {}, status: "completed" } as const
    await emitter.emit({ ...init, requestId: "r1" })
    const signed = await emitter.sign({ ...init, requestId: "r2" })
    // A record holding a function (an untyped caller's) cannot be structured-cloned into IndexedDB.
    const bad = await emitter.append({ ...signed, extra: () => 1 } as typeof signed).catch((e: unknown) => e)
    expect((bad as Error).name).toBe("DataCloneError")
    await emitter.emit({ ...init, requestId: "r3" })
    const all = await store.list()
    expect(all.map((r) => [r.request_id, r.chain?.seq])).toEqual([
      ["r1", 0],
      ["r3", 1],
    ])
    // It used to commit the tail alone: r3 sealed as #2 after a #1 that was never stored, a "gap" for ever after.
    expect(await verifyReceipts(all, { hmac: "k" }, { requireChain: true })).toMatchObject({ ok: true })
    await store.close()
  })
})
