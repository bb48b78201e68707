// A Vercel edge route (app/api/pay/route.ts). The ledger lives in Upstash Redis so every edge instance shares it;
// here it is injected, so the same handler runs against any LedgerStorage.
import { ActionLedger, type LedgerStorage } from "../src/index.ts"

export const runtime = "edge"

export function createPayRoute(
  storage: LedgerStorage,
  charge: (amount: number, recipient: string) => Promise<{ id: string }>,
) {
  const ledger = new ActionLedger({ storage, pollInterval: 0.01, onWarning: () => {} })
  const sendPayment = ledger.tool(
    {
      name: "send_payment",
      binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
    },
    async (args: { amount: number; recipient: string }, tx) =>
      tx.sideEffect(async () => {
        const intent = await charge(args.amount, args.recipient)
        await tx.recordExternalOperation(intent.id)
        return intent
      }),
  )
  return async function POST(request: Request): Promise<Response> {
    const body = (await request.json().catch(() => null)) as {
      amount?: unknown
      recipient?: unknown
      toolCallId?: unknown
    } | null
    if (
      !body ||
      typeof body.amount !== "number" ||
      typeof body.recipient !== "string" ||
      typeof body.toolCallId !== "string"
    ) {
      return Response.json(
        { error: { code: "invalid_body", message: "amount, recipient and toolCallId are required" } },
        { status: 400 },
      )
    }
    const intent = await sendPayment(
      { amount: body.amount, recipient: body.recipient },
      { toolCallId: body.toolCallId },
    )
    return Response.json(intent)
  }
}
