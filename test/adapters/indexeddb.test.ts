// IndexedDB adapter in Node over fake-indexeddb (the same suite runs in Chromium under test/browser).
import "fake-indexeddb/auto"
import { describe, expect, it, vi } from "vitest"
import { LedgerStorageUnavailableError, newEntry } from "../../src/adapter-kit.ts"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { InvalidOptionError } from "../../src/core/errors.ts"
import { idbBlockedUpgrade, idbRaceOneExecution } from "./indexeddb-shared.ts"

let n = 0
const fresh = () => `mycelium-test-${Date.now()}-${n++}`

testLedgerStorage("indexeddb (fake-indexeddb)", () => {
  const dbName = fresh()
  const storage = new IndexedDbLedgerStorage({ dbName })
  const peer = new IndexedDbLedgerStorage({ dbName })
  return { storage, peer, cleanup: async () => Promise.all([storage.close(), peer.close()]).then(() => {}) }
})

describe("IndexedDbLedgerStorage (Node)", () => {
  idbRaceOneExecution(fresh)
  idbBlockedUpgrade(fresh)

  it("keeps several stores in one database, each with its own rows", async () => {
    const dbName = fresh()
    const a = new IndexedDbLedgerStorage({ dbName, storeName: "a" })
    const b = new IndexedDbLedgerStorage({ dbName, storeName: "b" })
    await a.set(newEntry({ requestId: "r1", tool: "t" }, 1))
    await b.set(newEntry({ requestId: "r2", tool: "t" }, 1))
    expect(await a.get("r2")).toBeNull()
    expect((await b.get("r2"))?.requestId).toBe("r2")
    expect((await a.get("r1"))?.requestId).toBe("r1")
    await a.close()
    await b.close()
  })

  it("stores the Python row payload keyed by request_id", async () => {
    const dbName = fresh()
    const s = new IndexedDbLedgerStorage({ dbName })
    await s.set(newEntry({ requestId: "py", tool: "t", kwargs: { tool_call_id: "tc1" } }, 5))
    await s.close()
    const raw = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = indexedDB.open(dbName)
      req.onsuccess = () => {
        const g = req.result.transaction("ledger").objectStore("ledger").get("py")
        g.onsuccess = () => {
          req.result.close()
          resolve(g.result as Record<string, unknown>)
        }
        g.onerror = () => reject(g.error)
      }
      req.onerror = () => reject(req.error)
    })
    expect(raw).toMatchObject({ request_id: "py", terminal_outcome: "IN_FLIGHT", started_at: 5 })
    expect(Object.keys(raw)).toContain("side_effect_boundary")
  })

  it("refuses a blockedTimeout that is not seconds above 0 up to a day; null waits without a limit", () => {
    for (const blockedTimeout of [
      0,
      -1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      86_401,
      "3" as unknown as number,
    ]) {
      expect(() => new IndexedDbLedgerStorage({ dbName: fresh(), blockedTimeout })).toThrow(
        InvalidOptionError,
      )
    }
    for (const blockedTimeout of [0.05, 3, 86_400, null, undefined]) {
      expect(new IndexedDbLedgerStorage({ dbName: fresh(), blockedTimeout }).kind).toBe("indexeddb")
    }
  })

  it("opens when another connection upgrades past the version it asked for", async () => {
    const dbName = fresh()
    await new Promise<void>((resolve) => {
      const req = indexedDB.open(dbName, 1)
      req.onupgradeneeded = () => req.result.createObjectStore("other")
      req.onsuccess = () => resolve(req.result.close())
    })
    let jumped = false
    const factory = {
      open(name: string, version?: number) {
        if (version !== undefined && !jumped) {
          // Another tab's upgrade, queued just before this store's, goes one version further.
          jumped = true
          const other = indexedDB.open(name, version + 1)
          other.onsuccess = () => other.result.close()
        }
        return version === undefined ? indexedDB.open(name) : indexedDB.open(name, version)
      },
    } as unknown as IDBFactory
    const s = new IndexedDbLedgerStorage({ dbName, indexedDB: factory })
    expect(await s.get("x")).toBeNull()
    expect(jumped).toBe(true)
    await s.close()
  })

  it("an open that adds the store without progress fails closed after a few tries", async () => {
    let opens = 0
    const db = { version: 1, objectStoreNames: { contains: () => false }, close() {} }
    const indexedDB = {
      open() {
        opens++
        const req = Object.assign(new EventTarget(), { result: db, transaction: null })
        setTimeout(() => req.dispatchEvent(new Event("success")))
        return req
      },
    } as unknown as IDBFactory
    const s = new IndexedDbLedgerStorage({ dbName: fresh(), indexedDB })
    await expect(s.get("x")).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
    expect(opens).toBeLessThanOrEqual(6)
  })

  it("list() pages past 200 rows, and a cursor below the prefix starts at the prefix", async () => {
    const s = new IndexedDbLedgerStorage({ dbName: fresh() })
    for (let i = 0; i < 250; i++)
      await s.set(newEntry({ requestId: `r-${String(i).padStart(3, "0")}`, tool: "t" }, 1))
    for (const id of ["a-1", "b-1", "k-1", "k-2"]) await s.set(newEntry({ requestId: id, tool: "t" }, 1))
    const ids = async (o: { prefix?: string; cursor?: string }) => {
      const out: string[] = []
      for await (const e of s.list(o)) out.push(e.requestId)
      return out
    }
    expect(await ids({ prefix: "r-" })).toHaveLength(250)
    expect(await ids({ prefix: "k-", cursor: "a-1" })).toEqual(["k-1", "k-2"])
    await s.close()
  })

  it("write transactions are strict by default", async () => {
    const s = new IndexedDbLedgerStorage({ dbName: fresh() })
    await s.get("x")
    const spy = vi.spyOn(IDBDatabase.prototype, "transaction")
    try {
      await s.tryClaimInflight(newEntry({ requestId: "pay", tool: "t", owner: "w" }, 1), 60, 1)
      expect(spy.mock.calls.map((c) => c[2]?.durability)).toEqual(["strict"])
    } finally {
      spy.mockRestore()
      await s.close()
    }
  })

  it("adds the dispatch index to a ledger store made without it", async () => {
    const dbName = fresh()
    await new Promise<void>((resolve, reject) => {
      const req = indexedDB.open(dbName, 1)
      req.onupgradeneeded = () => req.result.createObjectStore("ledger", { keyPath: "request_id" })
      req.onsuccess = () => resolve(req.result.close())
      req.onerror = () => reject(req.error)
    })
    const s = new IndexedDbLedgerStorage({ dbName })
    await s.set(newEntry({ requestId: "r1", tool: "t", kwargs: { tool_call_id: "call_1" } }, 1))
    expect((await s.findByDispatchId("call_1")).map((e) => e.requestId)).toEqual(["r1"])
    await s.close()
  })

  it("rejects with LedgerStorageUnavailableError when the runtime has no IndexedDB", async () => {
    const g = globalThis as { indexedDB?: IDBFactory }
    const saved = g.indexedDB
    g.indexedDB = undefined
    const s = new IndexedDbLedgerStorage({ dbName: fresh() })
    g.indexedDB = saved
    await expect(s.get("x")).rejects.toMatchObject({ name: "LedgerStorageUnavailableError" })
  })
})
