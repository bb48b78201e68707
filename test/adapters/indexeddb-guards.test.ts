// IndexedDB task, state and receipt stores in Node over fake-indexeddb.
import "fake-indexeddb/auto"
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { testReceiptStore, testStateFlush, testTaskStore } from "../../src/conformance.ts"

let n = 0
const fresh = () => `mycelium-guards-test-${Date.now()}-${n++}`

testTaskStore("indexeddb (fake-indexeddb)", () => {
  const dbName = fresh()
  const storage = new IndexedDbTaskStore({ dbName })
  const peer = new IndexedDbTaskStore({ dbName })
  return { storage, peer, cleanup: () => Promise.all([storage.close(), peer.close()]).then(() => {}) }
})

testStateFlush("indexeddb (fake-indexeddb)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbStateFlushStore({ dbName }), peer: new IndexedDbStateFlushStore({ dbName }) }
})

testReceiptStore("indexeddb (fake-indexeddb)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbReceiptStore({ dbName }), peer: new IndexedDbReceiptStore({ dbName }) }
})
