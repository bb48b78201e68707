// The tour `mycelium demo` plays (langgraph#7417 in a terminal): a long tool call redispatched while the first still
// runs, without and with the ledger; a crash inside the side effect that hard-blocks; an operator's release that
// re-runs it exactly once. Every count printed is measured, and returned for the tests.
import {
  ActionLedger,
  LedgerHardBlockError,
  type LedgerStorage,
  resolvedOutcome,
} from "../core/ledger/index.ts"
import {
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  type ReceiptStore,
  verifyReceipts,
} from "../core/receipts/index.ts"
import { bold, CLI, dim, green, red } from "./style.ts"

export interface DemoOptions {
  readonly storage: LedgerStorage
  /** Where the rows are, for the closing lines. */
  readonly where: string
  /** Suffix for tool call ids, so repeated runs on a durable store never collide. */
  readonly runTag?: string
  readonly log?: (line: string) => void
  /** Where the tour's receipts go and the HMAC key that signs them. Default: memory, a key of its own. */
  readonly receipts?: { readonly store: ReceiptStore; readonly key: string }
}

export interface DemoReport {
  readonly unguardedExecutions: number
  readonly guardedExecutions: number
  /** The redispatch found the first call in flight and waited for it instead of running. */
  readonly pollerWaited: boolean
  readonly hardBlocked: boolean
  readonly rerunsAfterRelease: number
  /** Signed receipts emitted during the tour, and how many of them verified (signature and hash chain). */
  readonly receipts: number
  readonly receiptsVerified: number
}

/** The agent the tour's tools and receipts belong to. */
export const DEMO_AGENT = "research-agent"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const WORK_MS = 300
const REDISPATCH_AFTER_MS = 60

export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const log = options.log ?? ((l: string) => console.log(l))
  const tag = options.runTag ?? Date.now().toString(36)
  const section = (n: number, title: string) => log(`\n${bold(`[${n}/5] ${title}`)}`)
  const binding = {
    agentId: DEMO_AGENT,
    policyVersion: "2026.12.1",
    sideEffectClass: "non_idempotent_mutate",
  } as const

  log(bold("mycelium demo"))
  log("A framework redispatches a long tool call while the first is still running (langgraph#7417:")
  log("https://github.com/langchain-ai/langgraph/issues/7417). The tool spawns a sub-agent that costs money.")

  // 1. The bug: nothing stops the second dispatch.
  section(1, "Without mycelium: the redispatch runs the tool again")
  let unguarded = 0
  const subagentTask = async (args: { task: string }) => {
    unguarded++
    log(`  [EXECUTING] subagent_task(${JSON.stringify(args)})`)
    await sleep(WORK_MS)
    return { report: `analysis of ${args.task}` }
  }
  const first = subagentTask({ task: "analyze_market" })
  await sleep(REDISPATCH_AFTER_MS)
  await Promise.all([first, subagentTask({ task: "analyze_market" })])
  log(`  unguarded executions: ${unguarded}`)
  log(red("  BUG: duplicate side effect reproduced"))

  // 2. The fix: the redispatch finds the live claim and waits for its result.
  section(2, "With the action ledger: the redispatch waits for the first call")
  // Every outcome and release is signed (HMAC, the Python original's format) and chained; section 5 verifies them.
  const demoKey = options.receipts?.key ?? `demo-key-${tag}`
  const receiptStore = options.receipts?.store ?? new MemoryReceiptStore()
  const receipts = new ReceiptEmitter({
    signer: hmacReceiptSigner(demoKey),
    store: receiptStore,
    agentId: DEMO_AGENT,
  })
  const ledger = new ActionLedger({
    storage: options.storage,
    pollInterval: 0.02,
    leaseTtl: 60,
    onWarning: () => {},
    receipts,
  })
  let guarded = 0
  const guardedTask = ledger.tool({ name: "subagent_task", binding }, async (args: { task: string }, tx) =>
    tx.sideEffect(async () => {
      guarded++
      log(`  [EXECUTING] subagent_task(${JSON.stringify(args)})  fence=${tx.fence}`)
      await sleep(WORK_MS)
      return { report: `analysis of ${args.task}` }
    }),
  )
  const callId = `call_subagent_${tag}`
  const owner = guardedTask({ task: "analyze_market" }, { toolCallId: callId })
  // A store that is down rejects the claim during the sleep: unhandled until Promise.all below, Node would die of it.
  owner.catch(() => {})
  await sleep(REDISPATCH_AFTER_MS)
  const live = (await ledger.listTransitions({ tool: "subagent_task" })).find(
    (e) => resolvedOutcome(e, ledger.clock.now()) === "IN_FLIGHT",
  )
  const pollerWaited = live !== undefined
  if (live)
    log(`  [POLL] redispatch sees ${live.requestId.slice(0, 12)}... IN_FLIGHT with a held lease: it waits`)
  const t0 = Date.now()
  const [r1, r2] = await Promise.all([owner, guardedTask({ task: "analyze_market" }, { toolCallId: callId })])
  log(
    `  redispatch waited ${Date.now() - t0} ms and got the same result: ${JSON.stringify(r1) === JSON.stringify(r2)}`,
  )
  log(`  guarded executions: ${guarded}`)
  log(green("  PASS: one execution, both callers answered"))

  // 3. A crash between the effect and its answer: the outcome is unknown, so a redispatch must not run it again.
  section(3, "A crash inside the side effect: the redispatch is hard-blocked")
  let payments = 0
  let crash = true
  const sendPayment = ledger.tool({ name: "send_payment", binding }, async (args: { amount: number }, tx) =>
    tx.sideEffect(async () => {
      payments++
      log(`  [EXECUTING] send_payment(${JSON.stringify(args)})`)
      if (crash) throw new Error("connection reset after the gateway accepted the charge")
      return { charged: args.amount }
    }),
  )
  const payId = `call_pay_${tag}`
  await sendPayment({ amount: 100 }, { toolCallId: payId }).catch((e: Error) =>
    log(`  first call failed: ${e.message}`),
  )
  let hardBlocked = false
  await sendPayment({ amount: 100 }, { toolCallId: payId }).catch((e: unknown) => {
    hardBlocked = e instanceof LedgerHardBlockError
    log(`  redispatch -> ${(e as Error).name}`)
  })
  log(`  executions so far: ${payments} ${hardBlocked ? green("(PASS: no second charge)") : red("(FAIL)")}`)

  // 4. An operator checks the gateway, finds no charge, and releases the call: exactly one re-run.
  section(4, "Operator release: verified not executed, so it runs exactly once more")
  const [stuck] = await ledger.listTransitions({ stuck: true, tool: "send_payment" })
  let reruns = 0
  if (stuck) {
    log(
      `  mycelium transitions release ${stuck.requestId.slice(0, 12)}... --verified not-executed --by ops --reason "no charge at the gateway"`,
    )
    await ledger.release(stuck.requestId, {
      verified: "not_executed",
      by: "ops@example.com",
      reason: "no charge at the gateway",
    })
    crash = false
    const before = payments
    const again = await sendPayment({ amount: 100 }, { toolCallId: payId })
    await sendPayment({ amount: 100 }, { toolCallId: payId })
    reruns = payments - before
    log(
      `  re-runs after release: ${reruns}; a further redispatch returns the stored ${JSON.stringify(again)}`,
    )
    log(green("  PASS: exactly one re-run"))
  }

  // The crashed call ended UNKNOWN, which no receipt signs: its release does.
  section(5, "Signed audit receipts: each completed call and the release, verifiable later")
  const signed = await receiptStore.list()
  const verdict = await verifyReceipts(signed, { hmac: demoKey }, { requireChain: true })
  const verified = signed.length - new Set(verdict.failures.map((f) => f.index)).size
  for (const r of signed) {
    const release = (r.outputs as { operator_release?: unknown } | null)?.operator_release === true
    log(
      `  ${r.receipt_id.slice(0, 12)}...  ${r.action.padEnd(14)} ${r.status}${release ? " (operator release)" : ""}`,
    )
  }
  log(`  receipts verified: ${verified} of ${signed.length} (HMAC signature and hash chain)`)
  log(
    verdict.ok
      ? green("  PASS: every receipt verifies")
      : red(`  FAIL: ${verdict.failures.map((f) => f.reason).join(", ")}`),
  )

  const inspect = options.where.startsWith("file ")
    ? `  (inspect: ${CLI} transitions list --file ${options.where.slice(5)})`
    : ""
  log(`\n${dim(`ledger: ${options.where}${inspect}`)}`)
  return {
    unguardedExecutions: unguarded,
    guardedExecutions: guarded,
    pollerWaited,
    hardBlocked,
    rerunsAfterRelease: reruns,
    receipts: signed.length,
    receiptsVerified: verified,
  }
}
