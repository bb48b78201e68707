// IndexedDB task, state and receipt stores in Node over fake-indexeddb.
import "fake-indexeddb/auto"
import { describe, expect, it } from "vitest"
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../../src/core/index.ts"
import { testStateFlush } from "../conformance/state-flush.ts"
import { testTaskStore } from "../conformance/task-store.ts"

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

describe("IndexedDbReceiptStore", () => {
  it("two connections appending concurrently keep one unforked, verifiable chain", async () => {
    const dbName = fresh()
    const emit = (store: IndexedDbReceiptStore) =>
      new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "tab" })
    const a = emit(new IndexedDbReceiptStore({ dbName }))
    const b = emit(new IndexedDbReceiptStore({ dbName }))
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b).emit({ action: "t", actionKind: "tool", requestId: `r${i}`, status: "completed" }),
      ),
    )
    const listed = await new IndexedDbReceiptStore({ dbName }).list()
    expect(listed.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i))
    expect(await verifyReceipts(listed, { hmac: "k" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 30,
    })
  })
})
