// The IndexedDB adapter against Chromium's real IndexedDB (vitest browser mode, headless Debian chromium).
import { describe, expect, it } from "vitest"
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { idbBlockedUpgrade, idbRaceOneExecution } from "../adapters/indexeddb-shared.ts"

let n = 0
const fresh = () => `mycelium-browser-${Date.now()}-${n++}`

describe("runtime", () => {
  it("is a real Chromium IndexedDB", () => {
    expect(indexedDB.constructor.name).toBe("IDBFactory")
    expect(navigator.userAgent).toContain("Chrome")
  })
})

testLedgerStorage("indexeddb (Chromium)", () => {
  const dbName = fresh()
  const storage = new IndexedDbLedgerStorage({ dbName })
  const peer = new IndexedDbLedgerStorage({ dbName })
  return {
    storage,
    peer,
    cleanup: async () => {
      await storage.close()
      await peer.close()
      indexedDB.deleteDatabase(dbName)
    },
  }
})

describe("IndexedDbLedgerStorage (Chromium)", () => {
  idbRaceOneExecution(fresh)
  idbBlockedUpgrade(fresh)
})
