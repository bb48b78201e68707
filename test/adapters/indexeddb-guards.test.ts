// IndexedDB task, state and receipt stores in Node over fake-indexeddb.
import "fake-indexeddb/auto"
import { expect, it } from "vitest"
import {
  IndexedDbReceiptStore,
  IndexedDbStateFlushStore,
  IndexedDbTaskStore,
} from "../../src/adapters/indexeddb-guards.ts"
import { testReceiptStore, testStateFlush, testTaskStore } from "../../src/conformance.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  ReceiptStoreContendedError,
  ReceiptStoreCorruptError,
  verifyReceipts,
} from "../../src/receipts.ts"

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

// What another writer put in the receipts object store was handed out as a receipt (a null one failed a filtered
// list with a bare TypeError): every read that reaches it fails closed, as in the other stores.
it("a stored receipt damaged by another writer is receipt_store_corrupt, naming its key; pages before it read", async () => {
  const dbName = fresh()
  const store = new IndexedDbReceiptStore({ dbName })
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "payments" })
  for (const id of ["r0", "r1", "r2"])
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: id, status: "completed" })
  for (const damaged of [null, "junk", { foo: 1 }, []]) {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open(dbName)
      open.onsuccess = () => resolve(open.result)
      open.onerror = () => reject(open.error)
    })
    await new Promise((resolve, reject) => {
      const tx = db.transaction(["receipts"], "readwrite")
      tx.objectStore("receipts").put(damaged, 2)
      tx.oncomplete = resolve
      tx.onerror = reject
    })
    db.close()
    for (const read of [
      () => store.list(),
      () => store.list({ agentId: "payments" }),
      () => store.listPage({ limit: 3 }),
      () => store.listPage({ limit: 1, cursor: "1" }),
    ])
      await expect(read()).rejects.toSatisfy(
        (e) =>
          e instanceof ReceiptStoreCorruptError &&
          e.code === "receipt_store_corrupt" &&
          e.message.startsWith(`IndexedDB ${dbName} receipts key 2 is not`),
      )
    expect((await store.listPage({ limit: 1 })).receipts).toHaveLength(1)
  }
  await store.close()
})

// Read as the chain's tail, a tail record another writer left without its digest was continued: the next genuine
// receipt was stored with a link pointing at nothing, which then failed every read of the store as corrupt.
it("a chain tail damaged by another writer fails the append as receipt_store_corrupt, naming it; nothing is stored", async () => {
  const dbName = fresh()
  const store = new IndexedDbReceiptStore({ dbName })
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "payments" })
  for (const id of ["r0", "r1", "r2"])
    await emitter.emit({ action: "pay", actionKind: "tool", requestId: id, status: "completed" })
  for (const damaged of [
    { ledger: "payments", seq: 2 },
    { ledger: "payments", digest: 5, seq: 2 },
  ]) {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open(dbName)
      open.onsuccess = () => resolve(open.result)
      open.onerror = () => reject(open.error)
    })
    await new Promise((resolve, reject) => {
      const tx = db.transaction(["receipt_tails"], "readwrite")
      tx.objectStore("receipt_tails").put(damaged)
      tx.oncomplete = resolve
      tx.onerror = reject
    })
    db.close()
    await expect(
      emitter.emit({ action: "pay", actionKind: "tool", requestId: "r3", status: "completed" }),
    ).rejects.toSatisfy(
      (e) =>
        e instanceof ReceiptStoreCorruptError &&
        e.code === "receipt_store_corrupt" &&
        e.message.startsWith(`IndexedDB ${dbName} receipt_tails key payments is not`),
    )
    const all = await store.list()
    expect(all).toHaveLength(3)
    expect((await verifyReceipts(all, { hmac: "k" }, { requireChain: true })).ok).toBe(true)
  }
  await store.close()
})

// Another tab that moves the chain under every attempt: the contention error the other stores give (a caller may
// retry), not an outage (LedgerStorageUnavailableError, which it was) and not corruption.
it("a chain another writer moves under every attempt: ReceiptStoreContendedError after 50 attempts", async () => {
  const dbName = fresh()
  const store = new IndexedDbReceiptStore({ dbName })
  const other = new IndexedDbReceiptStore({ dbName })
  const memory = new MemoryReceiptStore()
  await new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: memory, agentId: "a" }).emit({
    action: "t",
    actionKind: "task",
    requestId: "r",
    status: "completed",
  })
  const { chain: _link, ...record } = (await memory.list())[0] as Awaited<
    ReturnType<typeof memory.list>
  >[number]
  let seals = 0
  let moved = 0
  const link = (tail: { seq: number; digest: string } | null, tag: string) => ({
    ledger: "c",
    seq: (tail?.seq ?? -1) + 1,
    prev: tail?.digest ?? null,
    digest: `${tag}-${(tail?.seq ?? -1) + 1}`,
    mac: "m",
  })
  const err = await store
    .append(record, {
      ledger: "c",
      async seal(tail) {
        seals++
        // The other writer appends between this read of the tail and the write that checks it.
        await other.append(
          { ...record, receipt_id: `other-${moved++}` },
          {
            ledger: "c",
            seal: async (t) => link(t, "other"),
          },
        )
        return link(tail, "mine")
      },
    })
    .catch((e: unknown) => e)
  expect(err).toBeInstanceOf(ReceiptStoreContendedError)
  expect((err as ReceiptStoreContendedError).code).toBe("receipt_store_contended")
  expect([seals, moved]).toEqual([50, 50])
  expect((await store.list()).map((r) => r.receipt_id).filter((id) => !id.startsWith("other-"))).toEqual([])
  await Promise.all([store.close(), other.close()])
})
