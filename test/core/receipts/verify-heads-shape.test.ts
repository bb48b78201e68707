// verifyReceipts reads `heads` as a plain object's own keys. A Map (or a number, a Set) has none: the truncation
// check was switched off and a chain with its last receipt cut passed.
import { describe, expect, it } from "vitest"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"

const KEY = "verify-heads-shape-key"

async function chainOf(n: number): Promise<Receipt[]> {
  const store = new MemoryReceiptStore()
  let t = 1_767_225_600
  const e = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "billing", now: () => t++ })
  for (let i = 0; i < n; i++)
    await e.emit({
      action: "charge",
      actionKind: "tool",
      requestId: `r${i}`,
      kwargs: { i },
      status: "completed",
    })
  return store.list()
}

describe("verifyReceipts heads that are not a plain object", () => {
  it("a Map of heads fails the cut chain instead of being ignored", async () => {
    const rs = await chainOf(3)
    const link = rs[2]?.chain
    if (!link) throw new Error("expected a chained receipt")
    const head = { seq: link.seq, digest: link.digest }
    const plain = await verifyReceipts(rs.slice(0, 2), { hmac: KEY }, { heads: { billing: head } })
    expect(plain.ok).toBe(false)
    for (const heads of [new Map([["billing", head]]), new Set([head]), 5]) {
      const v = await verifyReceipts(rs.slice(0, 2), { hmac: KEY }, { heads: heads as never })
      expect(v.ok).toBe(false)
      expect(v.failures).toContainEqual(
        expect.objectContaining({
          index: -1,
          reason: "truncated",
          message: expect.stringContaining("plain object"),
        }),
      )
    }
  })

  it("a plain object, including one without a prototype, is read as before", async () => {
    const rs = await chainOf(2)
    const link = rs[1]?.chain
    if (!link) throw new Error("expected a chained receipt")
    const heads = Object.assign(Object.create(null), { billing: { seq: link.seq, digest: link.digest } })
    expect((await verifyReceipts(rs, { hmac: KEY }, { heads })).ok).toBe(true)
    expect(
      (await verifyReceipts(rs, { hmac: KEY }, { heads: { billing: { seq: 1, digest: link.digest } } })).ok,
    ).toBe(true)
  })
})
