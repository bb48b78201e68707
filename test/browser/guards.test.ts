// Task, state and receipt stores on Chromium's real IndexedDB.
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { testReceiptStore, testStateFlush, testTaskStore } from "../../src/conformance.ts"

let n = 0
const fresh = () => `mycelium-guards-browser-${Date.now()}-${n++}`

testTaskStore("indexeddb (Chromium)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbTaskStore({ dbName }), peer: new IndexedDbTaskStore({ dbName }) }
})

testStateFlush("indexeddb (Chromium)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbStateFlushStore({ dbName }), peer: new IndexedDbStateFlushStore({ dbName }) }
})

testReceiptStore("indexeddb (Chromium)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbReceiptStore({ dbName }), peer: new IndexedDbReceiptStore({ dbName }) }
})
