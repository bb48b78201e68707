// A call completed over the edge API whose receipt store (or signer) then fails: 409 receipt_append_failed
// (receipt_unsigned), as before, but its message quoted the driver's own error, which may name a host, a user or a
// DSN (the other storage faults hide backend text). The operator gets the detail in the server log.
import { afterEach, expect, it, vi } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  type ReceiptSigner,
} from "../../src/receipts.ts"

afterEach(() => {
  vi.restoreAllMocks()
})

/** Claims and completes `requestId` over an app whose receipts go through `signer` and `store`. */
async function completeOver(signer: ReceiptSigner, store: MemoryReceiptStore, requestId: string) {
  const logged: string[] = []
  vi.spyOn(console, "error").mockImplementation((...a: unknown[]) => {
    logged.push(a.map(String).join(" "))
  })
  const storage = new MemoryLedgerStorage()
  const emitter = new ReceiptEmitter({ signer, store, agentId: "a" })
  const app = createLedgerApp({ storage, receipts: () => ({ emitter, keys: { hmac: "key" } }) })
  const post = (path: string, body: unknown) =>
    app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
  const begin = {
    tool: "pay",
    args: { amount: 1 },
    meta: { request_id: requestId },
    binding: { agent_id: "a", policy_version: "1", side_effect_class: "keyed_mutate" },
  }
  const claim = (await (await post("/v1/calls", begin)).json()) as { fence: number; lease: string }
  const r = await post(`/v1/calls/${requestId}/complete`, {
    fence: claim.fence,
    lease: claim.lease,
    result: { ok: 1 },
  })
  return { status: r.status, text: await r.text(), logged: logged.join("\n"), storage }
}

it("receipt_append_failed answers without the store driver's text, and the server log has it", async () => {
  const store = new MemoryReceiptStore()
  store.append = () =>
    Promise.reject(new TypeError("connect ECONNREFUSED postgres://ops:hunter2@db.internal"))
  const { status, text, logged, storage } = await completeOver(hmacReceiptSigner("key"), store, "order-1")
  expect(status).toBe(409)
  expect(JSON.parse(text).error.code).toBe("receipt_append_failed")
  expect(text).toContain("order-1")
  expect(text).not.toContain("hunter2")
  expect(text).not.toContain("db.internal")
  expect(logged).toContain("db.internal")
  // Recorded: the call replays its result.
  expect((await storage.get("order-1"))?.terminalOutcome).toBe("COMPLETED")
})

it("receipt_unsigned answers without the signer's text, and the server log has it", async () => {
  const signer = {
    ...hmacReceiptSigner("key"),
    sign: () => Promise.reject(new Error("KMS https://kms.internal/keys/prod refused token hunter2")),
  }
  const { status, text, logged, storage } = await completeOver(signer, new MemoryReceiptStore(), "order-2")
  expect(status).toBe(409)
  expect(JSON.parse(text).error.code).toBe("receipt_unsigned")
  expect(text).toContain("order-2")
  expect(text).not.toContain("hunter2")
  expect(text).not.toContain("kms.internal")
  expect(logged).toContain("kms.internal")
  expect((await storage.get("order-2"))?.terminalOutcome).toBe("COMPLETED")
})
