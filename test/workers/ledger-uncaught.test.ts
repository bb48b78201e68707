// The ledger in workerd (see uncaught.ts): a holder's write refused before it reaches the store, queued behind an
// earlier write of the same transition, and an HTTP store's token function that throws before its first await, were
// each handed back from a then() callback already rejected: one report per call, though the caller handles it.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage, LedgerHttpError } from "../../src/adapters/http.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { uncaught } from "./uncaught.ts"

const binding = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate",
} as const

describe("ledger rejections in workerd are handled, never reported uncaught", () => {
  it("a provider ref that is no string, recorded after the effect", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let requestId = ""
    const pay = ledger.tool({ name: "send_payment", binding }, async (_: { amount: number }, tx) => {
      requestId = tx.requestId
      await tx.sideEffect(() => "ch_1")
      // A parsed query string's object has no prototype: String() of it throws.
      await tx.recordExternalOperation(Object.create(null) as string)
      return "paid"
    })
    const seen = await uncaught(async () => {
      await expect(pay({ amount: 5 }, { toolCallId: "call-ref" })).rejects.toThrow(TypeError)
    })
    expect(seen).toEqual([])
    expect(await ledger.get(requestId)).toMatchObject({
      terminalOutcome: "FAILED_AFTER_EFFECT",
      externalOperationRef: null,
    })
  })

  it("a warning hook that throws at an unstorable result, completed after the effect", async () => {
    const warned: string[] = []
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      onWarning: (m) => {
        warned.push(m)
        if (m.includes("was not stored")) throw new Error("warnings fail this run")
      },
    })
    const pay = ledger.tool({ name: "send_payment", binding }, async (_: { amount: number }, tx) => {
      const receipt: { id: string; self?: unknown } = await tx.sideEffect(() => ({ id: "ch_2" }))
      receipt.self = receipt
      return receipt
    })
    const seen = await uncaught(async () => {
      await expect(pay({ amount: 5 }, { toolCallId: "call-cycle" })).rejects.toThrow("warnings fail this run")
    })
    expect(seen).toEqual([])
    expect(warned.filter((m) => m.includes("was not stored"))).toHaveLength(1)
  })

  it("an HTTP store's token function that throws before its first await", async () => {
    const storage = new HttpLedgerStorage({
      url: "https://ledger.invalid",
      token: async () => {
        throw new Error("no signing key bound")
      },
    })
    for (const requestId of ["r1", "r2"]) {
      const seen = await uncaught(async () => {
        const err = await storage.get(requestId).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(LedgerHttpError)
        expect(err).toMatchObject({
          code: "unreachable",
          message: expect.stringContaining("no signing key bound"),
        })
      })
      expect(seen).toEqual([])
    }
  })
})
