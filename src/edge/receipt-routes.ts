// `ledger:reader` (operators read too) lists a tenant's audit receipts and verifies them (docs/receipts.md).
import { verifyReceipts } from "../core/receipts/verify.ts"
import type { Api, Ctx, RouteContext, TenantReceipts } from "./context.ts"
import { HttpError } from "./errors.ts"
import { ReceiptsQuery, VerifyReceiptsBody } from "./schemas.ts"

export function receiptRoutes(api: Api, ctx: RouteContext): void {
  const receiptsOf = (c: Ctx): TenantReceipts => {
    const { receipts } = ctx.need(c, "reader")
    if (!receipts) throw new HttpError("receipts_not_configured", "this ledger does not keep audit receipts")
    return receipts
  }
  const filter = (c: Ctx) => {
    const q = ctx.query(c, ReceiptsQuery)
    return { ...(q.agent_id ? { agentId: q.agent_id } : {}), ...(q.ledger ? { ledger: q.ledger } : {}) }
  }

  api.get("/v1/receipts", async (c) => {
    const { emitter } = receiptsOf(c)
    return c.json({ receipts: await emitter.store.list(filter(c)) })
  })

  api.post("/v1/receipts/verify", async (c) => {
    const { emitter, keys } = receiptsOf(c)
    const b = await ctx.body(c, VerifyReceiptsBody)
    const list = await emitter.store.list(filter(c))
    const report = await verifyReceipts(list, keys, {
      requireChain: b.require_chain ?? false,
      ...(b.heads ? { heads: b.heads } : {}),
    })
    return c.json(report)
  })
}
