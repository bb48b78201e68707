// Adversarial review of receipt verification: someone who writes to the receipt store (or hands an auditor a
// file) wants an altered receipt to verify, or the verifier to crash.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import {
  type AuditReceiptRecord,
  hmacReceiptSigner,
  hmacSha256Hex,
  MemoryReceiptStore,
  parseReceiptJson,
  type Receipt,
  ReceiptEmitter,
  type ReceiptSigner,
  receiptPayloadText,
  verifyReceipt,
  verifyReceipts,
} from "../../../src/core/receipts/index.ts"

const KEY = "adversarial-review-key"
const vectors = JSON.parse(
  readFileSync(new URL("../../fixtures/python-vectors.json", import.meta.url), "utf8"),
)
const pyKey: string = vectors.receipts_hmac.signing_key
const pyReceipts: Array<{ record: AuditReceiptRecord }> = vectors.receipts_hmac.receipts

async function chainOf(n: number, signer: ReceiptSigner = hmacReceiptSigner(KEY)): Promise<Receipt[]> {
  let t = 1_767_225_600
  const store = new MemoryReceiptStore()
  const e = new ReceiptEmitter({ signer, store, agentId: "payment-agent", now: () => t++ })
  for (let i = 0; i < n; i++)
    await e.emit({
      action: "send_payment",
      actionKind: "tool",
      requestId: `req-${i}`,
      kwargs: { amount: 100 + i },
      outputs: { charge_id: `ch_${i}` },
      status: "completed",
    })
  return store.list()
}

const reasons = (v: { failures: Array<{ index: number; reason: string }> }) =>
  v.failures.map((f) => `${f.index}:${f.reason}`)

describe("fields the signature does not cover", () => {
  it("a field added to a record is refused, as the original's from_dict refuses it", async () => {
    const receipts = await chainOf(3)
    // The signature covers the eleven fields only: an added claim would otherwise ride on a valid signature.
    const r = { ...(receipts[1] as Receipt), approved_by: "cfo@example.com", amount_refunded: 0 }
    const v = await verifyReceipts([receipts[0], r, receipts[2]], { hmac: KEY })
    // Not a receipt, so it holds no place in the chain: the next one follows a hole.
    expect(reasons(v)).toEqual(["1:bad_shape", "2:gap"])
    expect(v.failures[0]?.message).toContain("approved_by")
    expect(v.failures[0]?.receiptId).toBe(r.receipt_id)
    expect(await verifyReceipt(r, { hmac: KEY })).toBe(false)
  })

  it("a field added to a chain link is refused", async () => {
    const receipts = await chainOf(2)
    const r = receipts[1] as Receipt
    const tampered = { ...r, chain: { ...r.chain, verified_by: "auditor" } }
    expect(reasons(await verifyReceipts([receipts[0], tampered], { hmac: KEY }))).toEqual(["1:bad_shape"])
  })

  it("the original's records and this port's chained receipts still pass the shape check", async () => {
    const v = await verifyReceipts(
      pyReceipts.map((p) => p.record),
      { hmac: pyKey },
    )
    expect(v).toEqual({ ok: true, valid: pyReceipts.length, failures: [] })
    expect((await verifyReceipts(await chainOf(3), { hmac: KEY }, { requireChain: true })).ok).toBe(true)
  })
})

describe("keys", () => {
  // A receipt forged under the empty key: what anyone can compute.
  async function forgedUnderEmptyKey(): Promise<Receipt[]> {
    const emptyKey: ReceiptSigner = { kind: "hmac", sign: (text) => hmacSha256Hex("", text) }
    return chainOf(2, emptyKey)
  }

  it("the signer refuses an empty key, and so does the verifier: a missing secret verifies nothing", async () => {
    expect(() => hmacReceiptSigner("")).toThrow(/non-empty signing key/)
    const forged = await forgedUnderEmptyKey()
    // E.g. `{ hmac: process.env.RECEIPT_KEY ?? "" }` with the variable unset.
    const v = await verifyReceipts(forged, { hmac: "" })
    expect(v.ok).toBe(false)
    expect(v.valid).toBe(0)
    expect(reasons(v)).toEqual(["0:bad_signature", "0:bad_link", "1:bad_signature", "1:bad_link"])
    expect((await verifyReceipts(forged, { hmac: ["", "other"] })).valid).toBe(0)
    expect(await verifyReceipt(forged[0] as Receipt, { hmac: "" })).toBe(false)
  })

  it("keys of the wrong type verify nothing and do not throw", async () => {
    const receipts = await chainOf(1)
    for (const keys of [null, undefined, { hmac: 5 }, { hmac: [null, 7] }, { jws: "x" }] as unknown[]) {
      const v = await verifyReceipts(receipts, keys as never)
      expect(v.ok).toBe(false)
      expect(v.failures.map((f) => f.reason)).toContain("bad_signature")
    }
  })
})

describe("hostile receipt objects never throw", () => {
  it("cycles, throwing getters, proxies and very deep nesting are bad_shape, and the rest still verify", async () => {
    const receipts = await chainOf(2)
    const cyclic: Record<string, unknown> = { ...(receipts[0] as Receipt) }
    const outputs: Record<string, unknown> = {}
    outputs.self = outputs
    cyclic.outputs = outputs
    const getter = Object.defineProperty({ ...(receipts[0] as Receipt) }, "outputs", {
      enumerable: true,
      get() {
        throw new Error("boom")
      },
    })
    const proxy = new Proxy(
      {},
      {
        get() {
          throw new Error("trap")
        },
      },
    )
    let deep: unknown = "x"
    for (let i = 0; i < 200_000; i++) deep = [deep]
    const nested = { ...(receipts[0] as Receipt), outputs: deep }
    const v = await verifyReceipts([cyclic, getter, proxy, nested, ...receipts], { hmac: KEY })
    expect(reasons(v)).toEqual(["0:bad_shape", "1:bad_shape", "2:bad_shape", "3:bad_shape"])
    expect(v.valid).toBe(2)
    expect(await verifyReceipt(cyclic as never, { hmac: KEY })).toBe(false)
  })

  it("a JWS verifier of the caller's own that throws fails that receipt, not the whole check", async () => {
    const jwsLike: ReceiptSigner = { kind: "jws", sign: async () => "e30.e30.c2ln" }
    const receipts = await chainOf(2, jwsLike)
    const jws = async (): Promise<boolean> => {
      throw new Error("unsupported key")
    }
    const v = await verifyReceipts(receipts, { jws })
    expect(reasons(v)).toEqual(["0:bad_signature", "0:bad_link", "1:bad_signature", "1:bad_link"])
  })
})

describe("number forms", () => {
  it("every Python number form keeps its own text, so no two payloads share a signature", async () => {
    const [r] = await chainOf(1)
    const texts = new Set<string>()
    const forms = [
      "100",
      "100.0",
      "1e-05",
      "0.00001",
      "1152921504606846976",
      "1.152921504606847e+18",
      "-0.0",
      "0",
    ]
    for (const form of forms) {
      const outputs = parseReceiptJson(`{"x": ${form}}`) as { x: unknown } as never
      texts.add(receiptPayloadText({ ...(r as Receipt), outputs }))
    }
    // 1e-05 and 0.00001 are one float (Python writes both 1e-05): one text; every other form is its own.
    expect(texts.size).toBe(forms.length - 1)
    // Re-signing is the only way to change a number's form: an int edited into a float fails.
    const edited = {
      ...(r as Receipt),
      outputs: parseReceiptJson('{"charge_id": "ch_0", "n": 1.0}') as never,
    }
    const plain = { ...(r as Receipt), outputs: { charge_id: "ch_0", n: 1 } }
    expect(receiptPayloadText(edited)).not.toBe(receiptPayloadText(plain))
  })
})
