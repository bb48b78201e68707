// A Bun HTTP service: `bun examples/bun.ts`. Bun.serve hosts POST /pay; the script then plays an agent framework
// that redispatches one tool call five times at once, prints what was charged, and stops the server.
import { ActionLedger, MemoryLedgerStorage } from "../src/index.ts"

interface BunServer {
  readonly port: number
  stop(): void
}
const bun = (
  globalThis as unknown as {
    Bun?: { serve(options: { port: number; fetch(req: Request): Promise<Response> }): BunServer }
  }
).Bun
if (!bun) throw new Error("run this example with bun")

// One process, one in-memory ledger: use FileLedgerStorage or UpstashLedgerStorage to survive restarts.
const ledger = new ActionLedger({
  storage: new MemoryLedgerStorage(),
  pollInterval: 0.005,
  onWarning: () => {},
})
let charges = 0
const sendPayment = ledger.tool(
  {
    name: "send_payment",
    binding: { agentId: "payment-agent", policyVersion: "2026.07.1", sideEffectClass: "keyed_mutate" },
  },
  async (args: { amount: number; recipient: string }, tx) =>
    tx.sideEffect(async () => {
      charges++
      await new Promise((r) => setTimeout(r, 20)) // the payment provider's latency
      return { id: `pi_${charges}`, amount: args.amount }
    }),
)

const server = bun.serve({
  port: 0,
  async fetch(req) {
    const body = (await req.json().catch(() => null)) as { amount?: unknown; toolCallId?: unknown } | null
    if (!body || typeof body.amount !== "number" || typeof body.toolCallId !== "string") {
      return Response.json(
        { error: { code: "invalid_body", message: "POST { amount, toolCallId }" } },
        { status: 400 },
      )
    }
    return Response.json(
      await sendPayment({ amount: body.amount, recipient: "acct_123" }, { toolCallId: body.toolCallId }),
    )
  },
})

const pay = () =>
  fetch(`http://127.0.0.1:${server.port}/pay`, {
    method: "POST",
    body: JSON.stringify({ amount: 100, toolCallId: "call_abc" }),
  }).then((r) => r.json() as Promise<{ id: string }>)
const results = await Promise.all(Array.from({ length: 5 }, pay))
const bad = await fetch(`http://127.0.0.1:${server.port}/pay`, { method: "POST", body: "nope" })
server.stop()
console.log(
  JSON.stringify({
    runtime: "bun",
    charges,
    ids: [...new Set(results.map((r) => r.id))],
    badStatus: bad.status,
  }),
)
