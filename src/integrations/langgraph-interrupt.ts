// interrupt() inside a guarded LangGraph tool: a pause before the side effect is released so the resume runs the
// tool once; one inside or after the side effect fails now, since its resume could only hard-block.
import { clip } from "../core/repr.ts"
import { GuardedToolError } from "./errors.ts"
import type { GuardContext, ToolLedger } from "./ledger-like.ts"

/** What recording a pause needs beyond `tool()`: an `ActionLedger` has both; a `RemoteLedger` (agent scope) has neither. */
interface PausableLedger {
  get(requestId: string): Promise<{
    readonly terminalOutcome: string
    readonly sideEffectBoundary: string
    readonly fence: number
    readonly externalOperationRef?: string | null
  } | null>
  release(
    requestId: string,
    options: { verified: "not_executed"; by: string; reason: string; expectedFence: number },
  ): Promise<unknown>
}

/** LangGraph's own test (`isGraphInterrupt`), by name: this entry never loads @langchain/langgraph. */
export function isGraphInterrupt(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name
  return name === "GraphInterrupt" || name === "NodeInterrupt"
}

const INVALID_RESUME = Symbol.for("langgraph.invalid_resume")

/**
 * LangGraph's own test (`isInvalidResume`): interrupt() refused the answer (its `responseSchema`), and the question
 * stays open to be answered again. That is a pause too, not a failure of the call.
 */
export function isInvalidResume(err: unknown): boolean {
  let current = err
  for (let depth = 0; depth < 10; depth++) {
    if (typeof current !== "object" || current === null) return false
    if ((current as Record<symbol, unknown>)[INVALID_RESUME] === true) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/**
 * `interrupt()` throws to pause the graph for human input, and the resume runs the tool again from its start. The
 * ledger has already recorded the throw as a failure.
 * - Before the side effect (`boundary: "manual"`, interrupt() before `sideEffect()`) that is FAILED_BEFORE_EFFECT,
 *   which blocks a non_idempotent_mutate call for good. Nothing ran, so the pause is released as `not_executed`
 *   (a receipted release, good for one redispatch) and the resume runs the tool once.
 * - Inside or after the side effect (`"whole"`, after `sideEffect()` began, or after `recordExternalOperation()`:
 *   the provider was called) the call is UNKNOWN, failed after its effect, or holds a provider handle: what ran
 *   before the interrupt is not known, so a resume could only hard-block, after a human had already answered. The
 *   interrupt becomes an error now, while the developer can still move it.
 */
export async function settleInterrupt(
  ledger: ToolLedger,
  tx: GuardContext,
  tool: string,
  effectBegan: boolean,
  interrupt: unknown,
): Promise<void> {
  const pausable = ledger as Partial<PausableLedger>
  const fence = (tx as { readonly fence?: unknown }).fence
  const readable = typeof pausable.get === "function" && typeof fence === "number"
  const row = readable ? await pausable.get?.(tx.requestId) : null
  const ours = row?.fence === fence
  // A recorded external operation means the provider was already called (an intent created, a key sent): a
  // release would let the resume call it again, so it counts as the side effect having begun.
  const ref = ours ? row?.externalOperationRef : null
  const began = effectBegan || (ours && (row?.sideEffectBoundary !== "not_crossed" || ref != null))
  if (began) {
    const where =
      ref != null ? `after recording external operation '${clip(String(ref))}'` : "inside its side effect"
    throw new GuardedToolError(
      "interrupt_inside_side_effect",
      `Tool '${tool}' called interrupt() ${where}, so the resume could not know what ran before it ` +
        `and would be hard-blocked (the call is recorded as ${row?.terminalOutcome ?? "UNKNOWN"}). Pass boundary: ` +
        "'manual' and call interrupt() before transitionOf(config).sideEffect(), or ask in a graph node before the tool.",
      { cause: interrupt },
    )
  }
  if (!ours || typeof fence !== "number" || row?.terminalOutcome !== "FAILED_BEFORE_EFFECT") return
  if (typeof pausable.release !== "function") return
  try {
    await pausable.release(tx.requestId, {
      verified: "not_executed",
      by: "langgraph interrupt()",
      reason: `tool '${tool}' paused for input before its side effect; the resume runs it`,
      expectedFence: fence,
    })
  } catch (e) {
    // Another dispatch moved the row after we read it (a keyed call may be re-run at once): it is theirs now.
    const code = (e as { code?: unknown } | null)?.code
    if (code !== "ledger_release_refused" && code !== "ledger_already_resolved") throw e
  }
}

const EFFECT_METHODS = new Set<PropertyKey>([
  "sideEffect",
  "markMaybeCrossed",
  "markCrossed",
  "recordExternalOperation",
])

/**
 * The call's transition as the tool body gets it, noting when the body starts its side effect (or records a
 * provider handle). A `RemoteLedger` cannot be read back, so this is how its pauses are judged; with an
 * `ActionLedger` the stored row says the same.
 */
export function trackedTransition(tx: GuardContext): { tx: GuardContext; began: () => boolean } {
  let began = false
  const tracked = new Proxy(tx, {
    get(target, key) {
      const value = Reflect.get(target, key, target)
      if (typeof value !== "function") return value
      // Bound to the real transition: its methods use private fields, which a proxy receiver would not have.
      const bound = value.bind(target) as (...args: unknown[]) => unknown
      if (!EFFECT_METHODS.has(key)) return bound
      return (...args: unknown[]) => {
        began = true
        return bound(...args)
      }
    },
  })
  return { tx: tracked, began: () => began }
}
