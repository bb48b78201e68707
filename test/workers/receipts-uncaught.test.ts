// Receipt stores in workerd (see uncaught.ts): a chained append runs queued behind the chain's earlier one, and a
// namespace that throws before the first await (a binding that is no Durable Object namespace) handed the queue's
// then() a promise already rejected: one report per append, though the caller gets the error. So did the memory
// store's queue for a seal that throws at once, and the emitter's emit() for a store whose append rejects at once.
import { describe, expect, it } from "vitest"
import { DurableObjectReceiptStore } from "../../src/adapters/durable-object-guards.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../src/core/receipts/index.ts"
import type { AuditReceiptRecord } from "../../src/core/receipts/record.ts"
import { uncaught } from "./uncaught.ts"

const record: AuditReceiptRecord = {
  receipt_id: "rcpt-1",
  agent_id: "a",
  action: "pay",
  action_kind: "tool",
  request_id: "r1",
  inputs: { args: [], kwargs: {} },
  outputs: "ok",
  status: "completed",
  timestamp: 1767225600.5,
  signature: "00",
  error: null,
}

describe("receipt rejections in workerd are handled, never reported uncaught", () => {
  it("a chained append to a Durable Object store whose binding throws at once", async () => {
    const store = new DurableObjectReceiptStore({
      idFromName: () => {
        throw new TypeError("LEDGER is not a Durable Object namespace")
      },
      get: () => null,
    })
    const chain = { ledger: "main", seal: async () => ({}) as never }
    for (let i = 0; i < 2; i++) {
      const seen = await uncaught(async () => {
        await expect(store.append(record, chain)).rejects.toThrow("not a Durable Object namespace")
      })
      expect(seen).toEqual([])
    }
  })

  it("a chained append to the memory store whose seal throws at once", async () => {
    const store = new MemoryReceiptStore()
    const chain = {
      ledger: "main",
      seal: () => {
        throw new TypeError("no chain key bound")
      },
    }
    for (let i = 0; i < 2; i++) {
      const seen = await uncaught(async () => {
        await expect(store.append(record, chain)).rejects.toThrow("no chain key bound")
      })
      expect(seen).toEqual([])
    }
    expect(await store.list()).toEqual([])
  })

  it("an emit() whose store refuses the append before its first await", async () => {
    class Refusing extends MemoryReceiptStore {
      override async append(): Promise<never> {
        throw new RangeError("receipt store is read-only")
      }
    }
    const emitter = new ReceiptEmitter({
      signer: hmacReceiptSigner("k".repeat(32)),
      store: new Refusing(),
      agentId: "a",
    })
    const seen = await uncaught(async () => {
      await expect(
        emitter.emit({
          action: "pay",
          actionKind: "tool",
          requestId: "r1",
          outputs: "ok",
          status: "completed",
        }),
      ).rejects.toThrow("receipt store is read-only")
    })
    expect(seen).toEqual([])
  })
})
