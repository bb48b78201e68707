// A receipt store's unreadable reply over the HTTP API. The Upstash store refuses an answer that is not its list (a
// client's fake answer to an aborted request, a damaged key) as UpstashReplyError; the API answered it 409, a conflict
// the caller caused, with up to 200 characters of the stored text in the message.
import { SignJWT } from "jose"
import { expect, it } from "vitest"
import { UpstashReceiptStore } from "../../src/adapters/upstash-receipts.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../src/receipts.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"

type Client = ConstructorParameters<typeof UpstashReceiptStore>[0]["redis"]

/** An app whose receipts live in an Upstash store over `redis`, and a reader's headers for it. */
async function readerOf(redis: Client) {
  const store = new UpstashReceiptStore({ redis })
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store, agentId: "a" })
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: jwtAuth({ secret: SECRET }),
    receipts: () => ({ emitter, keys: { hmac: "k" } }),
  })
  const token = await new SignJWT({ tenant: "t", scope: "ledger:reader" })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("auditor")
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(SECRET))
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const routes = [
    ["/v1/receipts", "GET"],
    ["/v1/receipts/verify", "POST"],
  ] as const
  return routes.map(([path, method]) =>
    app.request(path, { method, headers, ...(method === "POST" && { body: "{}" }) }),
  )
}

it("an Upstash receipt log that answers no list is 503 without the stored text, on list and verify", async () => {
  const answers = await readerOf({
    createScript: () => ({ exec: async () => "ok" }),
    get: async () => null,
    lrange: async () => "secret-tenant-data",
  })
  for (const r of await Promise.all(answers)) {
    const text = await r.text()
    expect(r.status).toBe(503)
    expect(JSON.parse(text)).toMatchObject({ error: { code: "upstash_unexpected_reply" } })
    expect(text).not.toContain("secret-tenant-data")
  }
})

// A receipt store that cannot be reached (a driver's TypeError, a socket reset) answered 500 internal_error: an
// outage must be the typed, retryable 503 the ledger's own store gives.
it("a receipt store outage is 503 ledger_storage_unavailable, on list and verify", async () => {
  const answers = await readerOf({
    createScript: () => ({ exec: async () => "ok" }),
    get: async () => null,
    lrange: async () => {
      throw new TypeError("fetch failed")
    },
  })
  for (const r of await Promise.all(answers))
    expect([r.status, await r.json()]).toEqual([
      503,
      { error: { code: "ledger_storage_unavailable", message: expect.stringContaining("retry") } },
    ])
})
