// A Cloudflare Worker: POST /pay charges once per tool call, however often the agent framework redispatches it.
// The ledger lives in the MyceliumLedgerObject Durable Object, so every isolate and every retry shares it.
// wrangler.toml: a durable_objects binding LEDGER → class MyceliumLedgerObject (new_sqlite_classes), and a
// PAYMENTS_URL var naming the payment service.
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../src/adapters/durable-object.ts"
import { ActionLedger } from "../src/index.ts"

export { MyceliumLedgerObject } from "../src/adapters/durable-object.ts"

export interface Env {
  LEDGER: LedgerObjectNamespace
  PAYMENTS_URL: string
}

const binding = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate",
} as const

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const body = (await request.json().catch(() => null)) as {
      amount?: unknown
      recipient?: unknown
      toolCallId?: unknown
    } | null
    if (
      request.method !== "POST" ||
      !body ||
      typeof body.amount !== "number" ||
      typeof body.recipient !== "string" ||
      typeof body.toolCallId !== "string"
    ) {
      return Response.json(
        { error: { code: "invalid_body", message: "POST { amount, recipient, toolCallId }" } },
        { status: 400 },
      )
    }
    // Per request, not at module scope: workerd forbids random ids (the ledger's owner) in global scope.
    const ledger = new ActionLedger({
      storage: new DurableObjectLedgerStorage(env.LEDGER),
      pollInterval: 0.01,
      onWarning: () => {},
    })
    const sendPayment = ledger.tool(
      { name: "send_payment", binding },
      async (args: { amount: number; recipient: string }, tx) =>
        tx.sideEffect(async () => {
          const res = await fetch(env.PAYMENTS_URL, { method: "POST", body: JSON.stringify(args) })
          const intent = (await res.json()) as { id: string }
          await tx.recordExternalOperation(intent.id)
          return intent
        }),
    )
    const intent = await sendPayment(
      { amount: body.amount, recipient: body.recipient },
      { toolCallId: body.toolCallId },
    )
    return Response.json(intent)
  },
}
