// The demo's agent side, without the DOM: an ActionLedger on IndexedDB, three guarded tools and a scripted agent.
// Every tab of the page opens the same database, so a second tab sees (and races on) the same rows.
import { IndexedDbLedgerStorage } from "../../src/adapters/indexeddb.ts"
import { IndexedDbReceiptStore } from "../../src/adapters/indexeddb-guards.ts"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerPollTimeoutError,
} from "../../src/index.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../src/receipts.ts"

/**
 * A key in page code is for the demo only: anyone who can read the page can sign. In an application the signer
 * runs where the key is kept (a worker, the edge API), or receipts are JWS-signed and verified with a public JWKS.
 */
export const DEMO_RECEIPT_KEY = "browser-demo-only"

/** What the page shows for one call attempt. */
export interface Decision {
  readonly callId: string
  /** EXECUTE (the body ran), RETURN (replayed), POLL → RETURN (waited for another tab), HARD_BLOCK, ERROR. */
  readonly gate: string
  readonly detail: string
}

export interface DemoCall {
  readonly callId: string
  readonly tool: "send_payment" | "send_email" | "long_report"
  readonly args: Record<string, string | number>
}

/** The scripted agent's plan: what a model would have asked for. */
export const SCRIPT: readonly DemoCall[] = [
  { callId: "call_pay", tool: "send_payment", args: { amount: 100, recipient: "acct_123" } },
  { callId: "call_mail", tool: "send_email", args: { to: "ops@example.com", subject: "paid" } },
]
export const CRASH_CALL: DemoCall = {
  callId: "call_crash",
  tool: "send_payment",
  args: { amount: 42, recipient: "acct_9" },
}
export const SLOW_CALL: DemoCall = { callId: "call_slow", tool: "long_report", args: { topic: "market" } }
/** Started, then its tab is closed mid-sideEffect(): a real crash, no failure is ever recorded. */
export const TAB_CRASH_CALL: DemoCall = {
  callId: "call_tab_crash",
  tool: "long_report",
  args: { topic: "lost" },
}

const binding = (sideEffectClass: "keyed_mutate" | "non_idempotent_mutate") => ({
  agentId: "browser-demo",
  policyVersion: "1",
  sideEffectClass,
})

interface Effect {
  readonly binding: ReturnType<typeof binding>
  readonly run: (args: Record<string, string | number>, callId: string) => Promise<unknown>
}

export class Demo {
  readonly ledger: ActionLedger
  readonly storage: IndexedDbLedgerStorage
  /** Signed receipts of every outcome, in a second database shared by the tabs like the ledger. */
  readonly receipts: IndexedDbReceiptStore
  readonly #name: string
  /** Set by the crash button: the next side effect of this call id throws mid-flight. */
  #crashNext = new Set<string>()
  #finishSlow: (() => void) | null = null

  /** `leaseTtl` (seconds) bounds how long a closed tab's call looks alive; the tab renews it while it runs. */
  constructor(name: string, leaseTtl = 10) {
    this.#name = name
    this.storage = new IndexedDbLedgerStorage({ dbName: name })
    this.receipts = new IndexedDbReceiptStore({ dbName: `${name}-receipts` })
    this.ledger = new ActionLedger({
      storage: this.storage,
      receipts: new ReceiptEmitter({
        signer: hmacReceiptSigner(DEMO_RECEIPT_KEY),
        store: this.receipts,
        agentId: "browser-demo",
      }),
      leaseTtl,
      pollInterval: 0.1,
      pollTimeout: 60,
      onWarning: () => {},
    })
  }

  /** Executions per call id, in localStorage: shared by every tab of this origin, like the database. */
  executions(callId: string): number {
    return Number(localStorage.getItem(`${this.#name}:exec:${callId}`) ?? 0)
  }
  #countExecution(callId: string): number {
    const n = this.executions(callId) + 1
    localStorage.setItem(`${this.#name}:exec:${callId}`, String(n))
    return n
  }

  readonly #effects: Record<DemoCall["tool"], Effect> = {
    send_payment: {
      binding: binding("keyed_mutate"),
      run: async (args, callId) => {
        if (this.#crashNext.delete(callId)) throw new Error("tab crashed while the gateway was charging")
        return { chargeId: `ch_${callId}`, amount: args.amount }
      },
    },
    send_email: {
      binding: binding("non_idempotent_mutate"),
      run: async (args, callId) => ({ messageId: `msg_${callId}`, to: args.to }),
    },
    long_report: {
      binding: binding("non_idempotent_mutate"),
      run: async (args) => {
        await new Promise<void>((resolve) => {
          this.#finishSlow = resolve
        })
        this.#finishSlow = null
        return { report: `report on ${args.topic}` }
      },
    },
  }

  /** The guarded tool for one call; made per call so the body knows which call id it counts. */
  #tool(c: DemoCall) {
    const effect = this.#effects[c.tool]
    return this.ledger.tool<Record<string, string | number>, unknown>(
      { name: c.tool, binding: effect.binding },
      // The whole body is the side effect: a failure inside it leaves the call UNKNOWN, never re-runnable.
      (args, tx) =>
        tx.sideEffect(async () => {
          this.#countExecution(c.callId)
          return effect.run(args, c.callId)
        }),
    )
  }

  /** Runs one call and reports which gate it went through, from what the ledger and the body did. */
  async call(c: DemoCall, onPolling?: () => void): Promise<Decision> {
    const before = this.executions(c.callId)
    const prior = await this.row(c.callId)
    if (prior?.terminalOutcome === "IN_FLIGHT") onPolling?.()
    try {
      const result = await this.#tool(c)(c.args, { toolCallId: c.callId })
      const ran = this.executions(c.callId) > before
      const gate = ran ? "EXECUTE" : prior?.terminalOutcome === "IN_FLIGHT" ? "POLL → RETURN" : "RETURN"
      return { callId: c.callId, gate, detail: JSON.stringify(result) }
    } catch (e) {
      const err = e as Error
      if (e instanceof LedgerHardBlockError)
        return { callId: c.callId, gate: "HARD_BLOCK", detail: err.message }
      if (e instanceof LedgerPollTimeoutError)
        return { callId: c.callId, gate: "POLL_TIMEOUT", detail: err.message }
      return { callId: c.callId, gate: "ERROR", detail: err.message }
    }
  }

  crashNext(callId: string): void {
    this.#crashNext.add(callId)
  }

  /** Lets this tab's slow call finish; false when this tab is not running it. */
  finishSlow(): boolean {
    if (!this.#finishSlow) return false
    this.#finishSlow()
    return true
  }

  /** An operator verified the crashed effect never happened: exactly one re-run is allowed. */
  async release(callId: string): Promise<LedgerEntry> {
    const row = await this.row(callId)
    if (!row) throw new Error(`no ledger row for ${callId}`)
    return this.ledger.release(row.requestId, {
      verified: "not_executed",
      by: "demo-operator",
      reason: "verified that the effect did not happen",
    })
  }

  /**
   * An operator asserts the worker behind a call is gone (its tab was closed). A lapsed lease alone is not proof:
   * a frozen tab could wake up and finish the effect, so the ledger refuses to release without this assertion.
   */
  async markWorkerDead(callId: string): Promise<LedgerEntry> {
    const row = await this.row(callId)
    if (!row) throw new Error(`no ledger row for ${callId}`)
    return this.ledger.markWorkerDeadFor(row.requestId, {
      by: "demo-operator",
      reason: "its tab was closed",
      overrideHeartbeat: true,
    })
  }

  async rows(): Promise<LedgerEntry[]> {
    return this.ledger.listTransitions()
  }

  async row(callId: string): Promise<LedgerEntry | undefined> {
    return (await this.rows()).find((r) => r.kwargs.tool_call_id === callId)
  }
}
