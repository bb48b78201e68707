// The scenario `mycelium demo` plays (langgraph#7417 in a terminal): a long tool call is redispatched while the
// first still runs.
import { mkdirSync, rmSync } from "node:fs"
import { dirname } from "node:path"
import { FileLedgerStorage } from "../adapters/file.ts"
import { ActionLedger, LedgerHardBlockError, type LedgerStorage } from "../core/ledger/index.ts"

export interface DemoOptions {
  readonly ledgerPath: string
  readonly log?: (line: string) => void
}

export interface DemoReport {
  readonly naiveCharges: number
  readonly ledgeredCharges: number
  readonly crashCharges: number
  readonly hardBlocked: boolean
  readonly storage: LedgerStorage
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A payment gateway that takes a while and keeps a record of every charge. */
class FakeGateway {
  readonly charges: Array<{ id: string; amount: number; recipient: string }> = []
  failNextResponse = false
  async charge(
    amount: number,
    recipient: string,
  ): Promise<{ id: string; amount: number; recipient: string }> {
    await sleep(150)
    const intent = { id: `pi_${this.charges.length + 1}`, amount, recipient }
    this.charges.push(intent)
    if (this.failNextResponse) {
      this.failNextResponse = false
      throw new Error("connection reset after the charge was accepted")
    }
    return intent
  }
}

export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const log = options.log ?? ((l: string) => console.log(l))
  mkdirSync(dirname(options.ledgerPath), { recursive: true })
  rmSync(options.ledgerPath, { force: true })
  const storage = new FileLedgerStorage(options.ledgerPath)
  const binding = {
    agentId: "payment-agent",
    policyVersion: "2026.07.1",
    sideEffectClass: "keyed_mutate",
  } as const

  log(
    "mycelium demo: a framework redispatches a long tool call while the first is still running (langgraph#7417)\n",
  )

  // 1. Without a guard.
  const naive = new FakeGateway()
  const sendNaive = (args: { amount: number; recipient: string }) => naive.charge(args.amount, args.recipient)
  const first = sendNaive({ amount: 100, recipient: "acct_123" })
  await sleep(50)
  const second = sendNaive({ amount: 100, recipient: "acct_123" })
  await Promise.all([first, second])
  log(
    `1. plain tool:      dispatched, redispatched 50 ms later -> charges at the gateway: ${naive.charges.length}  (paid twice)`,
  )

  // 2. The same tool through the ledger.
  const gw = new FakeGateway()
  const ledger = new ActionLedger({ storage, pollInterval: 0.01, leaseTtl: 60, onWarning: () => {} })
  const sendPayment = ledger.tool(
    { name: "send_payment", binding },
    async (args: { amount: number; recipient: string }, tx) =>
      tx.sideEffect(async () => {
        const intent = await gw.charge(args.amount, args.recipient)
        await tx.recordExternalOperation(intent.id)
        return intent
      }),
  )
  const a = sendPayment({ amount: 100, recipient: "acct_123" }, { toolCallId: "call_abc" })
  await sleep(50)
  const b = sendPayment({ amount: 100, recipient: "acct_123" }, { toolCallId: "call_abc" })
  const [ra, rb] = await Promise.all([a, b])
  log(
    `2. ledgered tool:   dispatched, redispatched 50 ms later -> charges: ${gw.charges.length}; both callers got ${ra.id} and ${rb.id}`,
  )
  const rc = await sendPayment({ amount: 100, recipient: "acct_123" }, { toolCallId: "call_abc" })
  log(`                    a third dispatch after completion returns the stored result: ${rc.id}`)

  // 3. A crash between the charge and its response.
  const crashGw = new FakeGateway()
  crashGw.failNextResponse = true
  const charge = ledger.tool(
    { name: "send_payment_v2", binding },
    async (args: { amount: number; recipient: string }, tx) =>
      tx.sideEffect(() => crashGw.charge(args.amount, args.recipient)),
  )
  await charge({ amount: 250, recipient: "acct_9" }, { toolCallId: "call_crash" }).catch((e: Error) => {
    log(`3. crash mid-call:  the gateway charged, then: ${e.message}`)
  })
  let hardBlocked = false
  await charge({ amount: 250, recipient: "acct_9" }, { toolCallId: "call_crash" }).catch((e: unknown) => {
    hardBlocked = e instanceof LedgerHardBlockError
    log(`                    redispatch -> ${(e as Error).name}: ${(e as Error).message}`)
  })
  const [stuck] = await ledger.listTransitions({ stuck: true })
  if (stuck) {
    const record = crashGw.charges[0]
    await ledger.release(stuck.requestId, {
      verified: "completed",
      result: record ?? null,
      by: "ops@example.com",
      reason: "charge found at the gateway",
    })
    const after = await charge({ amount: 250, recipient: "acct_9" }, { toolCallId: "call_crash" })
    log(
      `                    operator verified the charge and released it -> redispatch returns ${after.id}; charges: ${crashGw.charges.length}`,
    )
  }
  log(`\nledger file: ${options.ledgerPath}`)
  return {
    naiveCharges: naive.charges.length,
    ledgeredCharges: gw.charges.length,
    crashCharges: crashGw.charges.length,
    hardBlocked,
    storage,
  }
}
