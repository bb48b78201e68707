// POST /v1/receipts/verify requires chain links unless the caller opts out, and its bounds are checked at build time.
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { recordOf } from "../../src/core/receipts/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  type Receipt,
  ReceiptEmitter,
  type ReceiptStore,
} from "../../src/receipts.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"
const KEY = "verify-route-key"
const draft = (id: string) => ({
  action: "pay",
  actionKind: "tool" as const,
  requestId: id,
  status: "completed" as const,
})

async function verifier(served: () => Promise<Receipt[]>, options: Record<string, unknown> = {}) {
  const inner = new MemoryReceiptStore()
  const store: ReceiptStore = {
    append: (r, c) => inner.append(r, c),
    list: () => served(),
    listPage: async () => ({ receipts: await served(), cursor: null }),
  }
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner(KEY), store, agentId: "a" })
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: jwtAuth({ secret: SECRET }),
    receipts: () => ({ emitter, keys: { hmac: KEY } }),
    ...options,
  })
  const token = await new SignJWT({ tenant: "t", scope: "ledger:reader" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("auditor")
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(SECRET))
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  return {
    emitter,
    inner,
    verify: async (body: unknown = {}, query = "") => {
      const r = await app.request(`/v1/receipts/verify${query}`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
      })
      return { status: r.status, body: (await r.json()) as Record<string, unknown> }
    },
  }
}

describe("POST /v1/receipts/verify: chain links", () => {
  it("requires links by default: a stripped link moved before the chain is refused unless allow_unchained", async () => {
    let served: Receipt[] = []
    const { emitter, inner, verify } = await verifier(async () => served)
    // Signed before the outcome write, appended after it: x is older than y, which was appended first.
    const x = await emitter.sign({ ...draft("x-slow"), timestamp: 1000 })
    const y = await emitter.sign({ ...draft("y"), timestamp: 1000.2 })
    const w = await emitter.sign({ ...draft("w-deleted"), timestamp: 1000.3 })
    for (const r of [y, w, x]) await emitter.append(r)
    served = await inner.list()
    expect((await verify()).body).toMatchObject({ ok: true, valid: 3 })
    // w deleted, x's link stripped and moved to the front: only requireChain sees it.
    served = [recordOf(served[2] as Receipt), served[0] as Receipt]
    expect((await verify()).body).toMatchObject({ ok: false, failures: [{ index: 0, reason: "unchained" }] })
    expect((await verify({ allow_unchained: true })).body).toMatchObject({ ok: true, valid: 2 })
    // require_chain: false is the library's default rule, which cannot see this (docs/receipts.md).
    expect((await verify({ require_chain: false })).body).toMatchObject({ ok: true })
    expect((await verify({ allow_unchained: false })).body).toMatchObject({ ok: false })
  })

  it("a bad allow_unchained is 400 invalid_body", async () => {
    const { verify } = await verifier(async () => [])
    for (const body of [
      { allow_unchained: "yes" },
      { allow_unchained: 1 },
      { allow_unchained: true, require_chain: true },
    ]) {
      const r = await verify(body)
      expect([r.status, r.body]).toMatchObject([400, { error: { code: "invalid_body" } }])
    }
    expect((await verify({}, "?allow_unchained=true")).status).toBe(400)
  })
})

describe("createLedgerApp: verify bounds", () => {
  it("refuses a maxVerifyBytes or maxVerifyReceipts that is not a whole number >= 1 when the app is built", async () => {
    for (const name of ["maxVerifyBytes", "maxVerifyReceipts"])
      for (const v of [
        Number.NaN,
        Number(process.env.MYCELIUM_UNSET_FOR_TEST),
        0,
        -1,
        1.5,
        Infinity,
        "1000000",
      ])
        await expect(
          verifier(async () => [], { [name]: v }),
          `${name}: ${String(v)}`,
        ).rejects.toMatchObject({
          name: "InvalidOptionError",
          code: "invalid_option",
          message: expect.stringContaining(name),
        })
    const { verify } = await verifier(async () => [], { maxVerifyBytes: 1, maxVerifyReceipts: 1 })
    expect((await verify()).body).toMatchObject({ ok: true, valid: 0 })
  })
})
