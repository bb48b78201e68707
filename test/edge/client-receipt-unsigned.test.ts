// A RemoteLedger call whose body fails: the server records the failure, then its receipt signer fails
// (receipt_unsigned, 409). The warning must say the failure is recorded (it said "could not record the failure").
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../src/receipts.ts"

describe("RemoteLedger and a server whose receipt signer is down", () => {
  it("warns that a failure is recorded without its receipt, and rethrows the tool's error", async () => {
    const storage = new MemoryLedgerStorage()
    const hmac = hmacReceiptSigner("key")
    const signer = { ...hmac, sign: () => Promise.reject(new Error("KMS unavailable")) }
    const emitter = new ReceiptEmitter({ signer, store: new MemoryReceiptStore(), agentId: "a" })
    const app = createLedgerApp({ storage, receipts: () => ({ emitter, keys: { hmac: "key" } }) })
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const warnings: string[] = []
    const ledger = new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: (w) => warnings.push(w) })
    const pay = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async () => {
        throw new Error("card declined")
      },
    )
    await expect(pay({ amount: 1 }, { requestId: "order-1" })).rejects.toThrow("card declined")
    expect((await storage.get("order-1"))?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(
      /^the failure of 'pay' request 'order-1' is recorded but its receipt was not signed/,
    )
  })
})
