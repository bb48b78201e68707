// A key string UTF-8 cannot encode: an unpaired surrogate is written as U+FFFD, so 'k\ud800' and 'k\ufffd' were one
// key (Python's `signing_key.encode()` refuses the first). The signer refuses such a key, and the verifier (which never
// throws) verifies nothing with it, as with the empty key. (A JWS kid is sound: the header is JSON, which escapes it.)
import { describe, expect, it } from "vitest"
import {
  AuditReceiptError,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  verifyReceipt,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"

const LONE = ["k\ud800", "k\udc00", "\ud800k"]

const refused = (f: () => unknown) => {
  let thrown: unknown
  try {
    f()
  } catch (e) {
    thrown = e
  }
  expect(thrown).toBeInstanceOf(AuditReceiptError)
  expect((thrown as AuditReceiptError).code).toBe("audit_receipt_error")
  expect((thrown as Error).message).toContain("unpaired surrogate")
}

describe("a receipt key holding an unpaired surrogate", () => {
  it("hmacReceiptSigner refuses it with AuditReceiptError", () => {
    for (const key of LONE) refused(() => hmacReceiptSigner(key))
    // A key with a pair (an emoji) is valid Unicode and signs.
    expect(hmacReceiptSigner("k\ud83d\ude00").kind).toBe("hmac")
  })

  it("verifies nothing, not the receipts of the key UTF-8 turns it into", async () => {
    const store = new MemoryReceiptStore()
    const e = new ReceiptEmitter({ signer: hmacReceiptSigner("k\ufffd"), store, agentId: "a" })
    for (let i = 0; i < 2; i++)
      await e.emit({ action: "pay", actionKind: "tool", requestId: `r${i}`, status: "completed" })
    const receipts = await store.list()
    expect(await verifyReceipts(receipts, { hmac: "k\ufffd" }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 2,
    })
    for (const hmac of ["k\ud800", ["other", "k\udfff"]]) {
      const report = await verifyReceipts(receipts, { hmac }, { requireChain: true })
      expect(report.ok).toBe(false)
      expect(report.valid).toBe(0)
      expect(new Set(report.failures.map((f) => f.reason))).toEqual(new Set(["bad_signature", "bad_link"]))
      expect(await verifyReceipt(receipts[0] as never, { hmac })).toBe(false)
    }
  })
})
