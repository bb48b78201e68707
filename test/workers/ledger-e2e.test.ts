// End to end inside workerd: ledger.tool() over DurableObjectLedgerStorage. Every call builds its own ledger and
// client, as separate Worker requests (or isolates) would; only the Durable Object is shared.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { ActionLedger, LedgerHardBlockError } from "../../src/core/index.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
let n = 0
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`
const binding = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate",
} as const

interface Gateway {
  charge(amount: number, worker: string): Promise<{ id: string }>
}

/** One "request": a fresh ledger + client, a ledgered send_payment whose effect is `gateway.charge`. */
function sendPayment(ledgerName: string, worker: string, gateway: Gateway) {
  const ledger = new ActionLedger({
    storage: new DurableObjectLedgerStorage(LEDGER, { name: ledgerName, shards: 4 }),
    leaseTtl: 60,
    pollInterval: 0.01,
    owner: worker,
    onWarning: () => {},
  })
  const tool = ledger.tool({ name: "send_payment", binding }, async (args: { amount: number }, tx) =>
    tx.sideEffect(() => gateway.charge(args.amount, worker)),
  )
  return { ledger, tool }
}

/** A gateway whose every charge is a row in a separate effects ledger: counted from storage, not from memory. */
function loggingGateway(ledgerName: string, failFirst = false): Gateway & { count(): Promise<number> } {
  const effects = new DurableObjectLedgerStorage(LEDGER, { name: `${ledgerName}-effects` })
  let calls = 0
  return {
    async charge(amount, worker) {
      calls++
      const id = `pi_${calls}`
      await effects.set(
        newEntry({ requestId: `${id}:${crypto.randomUUID()}`, tool: "charge", owner: worker }, 1),
      )
      if (failFirst && calls === 1) throw new Error("gateway timeout")
      return { id: `${id}:${amount}` }
    },
    async count() {
      let c = 0
      for await (const _ of effects.list()) c++
      return c
    },
  }
}

describe("ledger.tool() with DurableObjectLedgerStorage in workerd", () => {
  it("a redispatch returns the recorded result without running the effect again", async () => {
    const name = fresh("e2e-return")
    const gw = loggingGateway(name)
    const first = await sendPayment(name, "w1", gw).tool({ amount: 100 }, { toolCallId: "call_abc" })
    const again = await sendPayment(name, "w2", gw).tool({ amount: 100 }, { toolCallId: "call_abc" })
    expect(first).toEqual({ id: "pi_1:100" })
    expect(again).toEqual(first)
    expect(await gw.count()).toBe(1)
  })

  it("32 concurrent requests with one tool call id: one execution, every caller gets its result", async () => {
    const name = fresh("e2e-race")
    const gw = loggingGateway(name)
    const results = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        sendPayment(name, `w${i}`, gw).tool({ amount: 7 }, { toolCallId: "call_storm" }),
      ),
    )
    expect(await gw.count()).toBe(1)
    for (const r of results) expect(r).toEqual({ id: "pi_1:7" })
  })

  it("a crash inside sideEffect() hard-blocks redispatches until an operator releases it", async () => {
    const name = fresh("e2e-crash")
    const gw = loggingGateway(name, true)
    const { ledger, tool } = sendPayment(name, "w1", gw)
    await expect(tool({ amount: 5 }, { toolCallId: "c1" })).rejects.toThrow("gateway timeout")
    const [row] = await ledger.listTransitions({ stuck: true })
    expect(row).toMatchObject({ terminalOutcome: "UNKNOWN", sideEffectBoundary: "maybe_crossed" })

    const redispatch = sendPayment(name, "w2", gw)
    const err = await redispatch.tool({ amount: 5 }, { toolCallId: "c1" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerHardBlockError)
    expect(await gw.count()).toBe(1)

    const id = row?.requestId as string
    await sendPayment(name, "ops", gw).ledger.release(id, {
      verified: "not_executed",
      by: "ops@acme",
      reason: "gateway shows no charge",
    })
    const after = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        sendPayment(name, `r${i}`, gw).tool({ amount: 5 }, { toolCallId: "c1" }),
      ),
    )
    expect(await gw.count()).toBe(2)
    for (const r of after) expect(r).toEqual({ id: "pi_2:5" })
    expect(await redispatch.ledger.get(id)).toMatchObject({
      terminalOutcome: "COMPLETED",
      resolvedBy: "ops@acme",
    })
  })
})
