// IndexedDB task, state and receipt stores in Node over fake-indexeddb.
import "fake-indexeddb/auto"
import { expect, it } from "vitest"
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { testReceiptStore, testStateFlush, testTaskStore } from "../../src/conformance.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/receipts.ts"

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

it("80 concurrent appends to one chain through one handle all land, in one chain", async () => {
  const store = new IndexedDbReceiptStore({ dbName: fresh() })
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "agent-1" })
  const r = await Promise.allSettled(
    Array.from({ length: 80 }, (_, i) =>
      emitter.emit({ action: "pay", actionKind: "tool", requestId: `r${i}`, status: "completed" }),
    ),
  )
  expect(r.filter((x) => x.status === "rejected")).toEqual([])
  const all = await store.list()
  expect(all).toHaveLength(80)
  expect((await verifyReceipts(all, { hmac: "k" }, { requireChain: true })).ok).toBe(true)
  await store.close()
})
