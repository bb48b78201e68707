// IndexedDB adapter in Node over fake-indexeddb (the same suite runs in Chromium under test/browser).
import "fake-indexeddb/auto"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
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

  it("rejects with LedgerStorageUnavailableError when the runtime has no IndexedDB", async () => {
    const g = globalThis as { indexedDB?: IDBFactory }
    const saved = g.indexedDB
    g.indexedDB = undefined
    const s = new IndexedDbLedgerStorage({ dbName: fresh() })
    g.indexedDB = saved
    await expect(s.get("x")).rejects.toMatchObject({ name: "LedgerStorageUnavailableError" })
  })
})
