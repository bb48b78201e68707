// Task, state and receipt stores on Chromium's real IndexedDB.
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
const fresh = () => `mycelium-guards-browser-${Date.now()}-${n++}`

testTaskStore("indexeddb (Chromium)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbTaskStore({ dbName }), peer: new IndexedDbTaskStore({ dbName }) }
})

testStateFlush("indexeddb (Chromium)", () => {
  const dbName = fresh()
  return { storage: new IndexedDbStateFlushStore({ dbName }), peer: new IndexedDbStateFlushStore({ dbName }) }
})

describe("IndexedDbReceiptStore (Chromium)", () => {
  it("two connections appending concurrently keep one verifiable chain", async () => {
    const dbName = fresh()
    const emit = (store: IndexedDbReceiptStore) =>
      new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "tab" })
    const a = emit(new IndexedDbReceiptStore({ dbName }))
    const b = emit(new IndexedDbReceiptStore({ dbName }))
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).emit({ action: "t", actionKind: "tool", requestId: `r${i}`, status: "completed" }),
      ),
    )
    const listed = await new IndexedDbReceiptStore({ dbName }).list()
    expect(listed.map((r) => r.chain?.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    expect(await verifyReceipts(listed, { hmac: "k" }, { requireChain: true })).toMatchObject({ ok: true })
  })
})
