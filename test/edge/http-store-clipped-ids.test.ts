// A store's claim refusals quote the request id too, and a requestIdFrom key is the model's argument: over the API's
// body limit (HttpLedgerStorage, a Durable Object) or holding U+0000 (those and Upstash, Neon), a 1 MB value came back
// whole in the LedgerConfigError, which the integrations show the model in every turn. Quoted clipped as the
// ledger's own refusals (test/core/ledger/clipped-ids.test.ts).
import { describe, expect, it } from "vitest"
import { LedgerConfigError } from "../../src/core/index.ts"
import { paymentOverHttp } from "./payment-over-http.ts"

describe("a store's claim refusal quotes a long request id clipped", () => {
  for (const [label, value] of [
    ["over the API's body limit", `o-1${"x".repeat(600_000)}`],
    ["holding U+0000", `o-1\u0000${"x".repeat(100_000)}`],
  ] as const) {
    it(label, async () => {
      const { rows, pay, runs } = paymentOverHttp()
      const e = (await pay({ orderId: value }).catch((e: unknown) => e)) as Error
      expect(e).toBeInstanceOf(LedgerConfigError)
      expect(e.message.length).toBeLessThan(2000)
      expect(e.message).toContain(`request 'pay:orderId:${value.slice(0, 300 - "pay:orderId:".length)}...':`)
      expect(e.message).toMatch(/nothing was (claimed|written)$/)
      expect([runs(), rows.size]).toEqual([0, 0])
    })
  }
})
