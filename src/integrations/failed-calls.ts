// A model's retry of a failed tool call is a new tool call: a new id, so a new ledger key. When the failed call may
// have taken effect (the gateway timed out after charging, the completion write hit an outage), the framework shows
// the model the error (LangGraph's ToolNode, the AI SDK, OpenAI Agents' errorFunction), the model calls again with
// the same arguments, and the ledger runs the payment a second time. Within one conversation (a thread, or the one
// run the framework hands every call), a call with the same tool and arguments as an earlier call that failed after
// its body started is therefore the same intent until that call is settled.
import { LedgerHardBlockError } from "../core/ledger/errors.ts"
import type { CallMeta } from "../core/ledger/index.ts"

/** What the check reads from the ledger (an `ActionLedger`; a `RemoteLedger` has no `get`, and is not checked). */
interface RowReader {
  get(requestId: string): Promise<{
    readonly terminalOutcome: string
    readonly sideEffectBoundary: string
    readonly operatorResolution: string | null
    readonly result: unknown
  } | null>
}

interface Earlier {
  readonly requestId: string
  readonly toolCallId: string
}

/** Kept per guarded tool in this process; the oldest go first past this many. */
const MAX_REMEMBERED = 1000

/** Classes whose repeat is harmless are not held: a read, or an idempotent mutation. */
const REPEATABLE = new Set(["read", "idempotent_mutate"])

export type RetryVerdict = { readonly kind: "run" } | { readonly kind: "return"; readonly result: unknown }

/** One call as the memory sees it: its thread, node and arguments, and its own tool-call id. */
export interface HeldCall {
  readonly key: string
  readonly toolCallId: string
}

/** The failed calls of one guarded tool, by thread, node and arguments. */
export class FailedCalls {
  readonly #earlier = new Map<string, Earlier>()
  readonly #tool: string

  constructor(tool: string) {
    this.#tool = tool
  }

  /**
   * The call as held, or null when it is not: no conversation or tool-call id, a repeatable class, odd arguments.
   * The conversation is the call's thread id, else `run`: an object the framework hands every call of one run.
   */
  held(meta: CallMeta, args: unknown, sideEffectClass: string | undefined, run?: unknown): HeldCall | null {
    const { toolCallId } = meta
    const scope = meta.threadId ? `thread:${meta.threadId}` : runScope(run)
    if (!scope || !toolCallId || !sideEffectClass || REPEATABLE.has(sideEffectClass)) return null
    const text = stableJson(args)
    return text === undefined ? null : { key: JSON.stringify([scope, meta.node ?? "", text]), toolCallId }
  }

  /** A call whose body started has failed: a later call with a new id and the same key is checked against it. */
  remember(call: HeldCall, requestId: string): void {
    this.#earlier.delete(call.key)
    this.#earlier.set(call.key, { requestId, toolCallId: call.toolCallId })
    if (this.#earlier.size > MAX_REMEMBERED) this.#earlier.delete(this.#earlier.keys().next().value as string)
  }

  /** A call of this key succeeded (a retry that ran, a resumed call): the next one is a new intent. */
  forget(call: HeldCall): void {
    this.#earlier.delete(call.key)
  }

  /**
   * Before a call runs: `run` when no earlier call of the same key may have taken effect; `return` with the earlier
   * call's result once it completed (an operator said so, or its late completion landed); a hard block while the
   * earlier call's outcome is unknown. A ledger outage here propagates: nothing runs blind.
   */
  async check(ledger: unknown, call: HeldCall): Promise<RetryVerdict> {
    const { key, toolCallId } = call
    const earlier = this.#earlier.get(key)
    const reader = ledger as Partial<RowReader>
    if (!earlier || earlier.toolCallId === toolCallId || typeof reader.get !== "function")
      return { kind: "run" }
    const row = await reader.get(earlier.requestId)
    // The retry gets the outcome it asked for; a call after it is a new intent.
    if (row?.terminalOutcome === "COMPLETED") {
      this.#earlier.delete(key)
      return { kind: "return", result: row.result }
    }
    const settledNotRun =
      !row ||
      row.operatorResolution === "not_executed" ||
      (row.terminalOutcome === "FAILED_BEFORE_EFFECT" && row.sideEffectBoundary === "not_crossed")
    if (settledNotRun) {
      this.#earlier.delete(key)
      return { kind: "run" }
    }
    throw new LedgerHardBlockError(
      `Tool '${this.#tool}' already ran with these arguments in this thread (tool call ${earlier.toolCallId}) and ` +
        `failed with its outcome unknown (${row.terminalOutcome}, boundary ${row.sideEffectBoundary}): it may have ` +
        `taken effect. Do not call it again. An operator must settle request '${earlier.requestId}' first ` +
        "(mycelium transitions release).",
    )
  }
}

/**
 * Runs one guarded call under the memory: checks it first, forgets the key when it succeeds, remembers it when it
 * fails after its body started (`started()` gives the request id then). `replayed` turns an earlier call's stored
 * result into what the framework expects.
 */
export async function runHeld<R>(
  failed: FailedCalls,
  held: HeldCall | null,
  ledger: unknown,
  started: () => string | null,
  call: () => Promise<R>,
  replayed: (stored: unknown) => R | Promise<R>,
): Promise<R> {
  if (!held) return call()
  const earlier = await failed.check(ledger, held)
  if (earlier.kind === "return") return replayed(earlier.result)
  try {
    const out = await call()
    failed.forget(held)
    return out
  } catch (err) {
    const requestId = started()
    if (requestId !== null) failed.remember(held, requestId)
    throw err
  }
}

/** The normalized side-effect class of a ledgered call (`ActionLedger` and `RemoteLedger` both expose it). */
export function sideEffectClassOf(call: unknown): string | undefined {
  return (call as { binding?: { sideEffectClass?: string } | null }).binding?.sideEffectClass
}

const runIds = new WeakMap<object, number>()
let nextRunId = 0

/** A run object's id in this process (held weakly: a finished run's memory goes with it). */
function runScope(run: unknown): string | null {
  if (typeof run !== "object" || run === null) return null
  let id = runIds.get(run)
  if (id === undefined) {
    id = ++nextRunId
    runIds.set(run, id)
  }
  return `run:${id}`
}

/** JSON with sorted keys, or undefined for what JSON cannot hold (a cycle, a BigInt). */
function stableJson(v: unknown): string | undefined {
  try {
    return JSON.stringify(v, (_k, value: unknown) =>
      value && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : value,
    )
  } catch {
    return undefined
  }
}
