// What the integrations need from a ledger, typed structurally so an `ActionLedger` and a `RemoteLedger`
// (mycelium-runtime/client, same `tool(options, fn)` shape) are both accepted without importing either class.
import { InvalidOptionError } from "../core/errors.ts"
import type { CallMeta, LedgeredToolOptions, ToolArgs } from "../core/ledger/index.ts"
import { GuardedToolError } from "./errors.ts"

/** The per-call context a ledgered tool body receives (`TransitionContext` on an `ActionLedger`). */
export interface GuardContext {
  readonly requestId: string
  readonly signal: AbortSignal
  /** Writes `maybe_crossed` durably, then runs `fn`: a crash inside leaves the call UNKNOWN (hard-block). */
  sideEffect<T>(fn: () => Promise<T> | T): Promise<T>
  markMaybeCrossed(): Promise<void>
  markCrossed(): Promise<void>
  recordExternalOperation(ref: string): Promise<void>
  renewLease(leaseTtl?: number): Promise<void>
}

/** Anything with the ledger's `tool(options, fn)`: `ActionLedger`, `RemoteLedger`. */
export interface ToolLedger {
  tool<A extends object, R>(
    options: LedgeredToolOptions,
    fn: (args: ToolArgs<A>, tx: GuardContext) => Promise<R> | R,
  ): (args: A, meta?: CallMeta) => Promise<R>
}

/** Ledger options of one guarded tool, without its name (the framework's tool name is used). */
export interface GuardLedgerOptions extends Omit<LedgeredToolOptions, "name"> {
  /**
   * Where the guard's warnings go (default `console.warn`): a call that completed but whose receipt the ledger could
   * not store or sign, whose result the model is given. A ledger keeps its own `onWarning` to itself: pass the same.
   */
  readonly onWarning?: (message: string) => void
}

/**
 * How a tool body that does not know about the ledger is run. `"whole"` (the default) marks the whole body of
 * any tool whose binding is not `read` as the side effect: a crash inside it hard-blocks a redispatch instead of
 * running the body twice. `"manual"` leaves it to the body (`transitionOf(...)` → `tx.sideEffect()`).
 */
export type BoundaryMode = "whole" | "manual"

/** Runs `body` under the boundary mode: `"whole"` wraps it in `tx.sideEffect()` unless the tool is a read. */
export function runWithBoundary<R>(
  mode: BoundaryMode,
  options: GuardLedgerOptions,
  tx: GuardContext,
  body: () => Promise<R> | R,
): Promise<R> {
  const binding = options.binding as { sideEffectClass?: string } | undefined
  return mode === "whole" && binding?.sideEffectClass !== "read"
    ? tx.sideEffect(body)
    : // Started a microtask later, as before, its promise awaited rather than handed back from then(): an async body
      // that throws before its first await gives one already rejected, which workerd reports as uncaught.
      (async () => {
        await undefined
        return await body()
      })()
}

/**
 * Checks a guard's options when wrapping: found at a call, a bad one would fail every call and its error would go to
 * the model. A `boundary` taken as `"manual"` by mistake would leave the body unmarked, so a retry runs it again.
 */
export function checkGuard(ledger: ToolLedger, options: LedgeredToolOptions, boundary: unknown): void {
  if (boundary !== "whole" && boundary !== "manual")
    throw new InvalidOptionError(
      `Tool '${options.name}': boundary must be "whole" or "manual", got ${JSON.stringify(boundary)}`,
    )
  // The ledger checks the binding, leaseTtl and the poll options when it makes a tool, which does no I/O.
  ledger.tool(options, () => 0)
}

/** Refuses `guardTools()` options under a key that names no tool: that tool would run without them (no binding). */
export function checkToolKeys(options: object, names: readonly string[]): void {
  for (const k in options)
    if (!names.includes(k))
      throw new InvalidOptionError(
        `guardTools(): options for '${k}', which names no tool (tools: ${names.join(", ")})`,
      )
}

/** Drops empty fields of a metadata patch, so a framework's `undefined` or `""` never shadows a real value. */
export function cleanMeta(meta: Partial<CallMeta>): CallMeta {
  return Object.fromEntries(Object.entries(meta).filter(([, v]) => v != null && v !== "")) as CallMeta
}

/**
 * Refuses, before the claim, a call of a ledgered tool with no identity: no tool-call id (a provider that sends "",
 * as Gemini's OpenAI-compatible endpoint does), no `requestId`, no `binding.requestIdFrom`, no thread or run from
 * `meta`. The ledger would key it by its arguments alone, one row for every conversation: another user's "pay bob 10"
 * got this one's result and never ran, and a read replayed one user's answer ("my orders") to another. A tool without
 * a binding (a fresh id each call) runs; so does a call in a thread (LangGraph's documented key: its arguments there).
 */
export function checkCallId(run: unknown, name: string, meta: CallMeta): void {
  const b = (run as { binding?: { sideEffectClass?: string; requestIdFrom?: string | null } | null }).binding
  const scoped = meta.toolCallId || meta.requestId !== undefined || meta.threadId || meta.runId
  if (!b || b.requestIdFrom || scoped) return
  throw new GuardedToolError(
    "missing_tool_call_id",
    `Tool '${name}' got no tool-call id: its ledger key would be its arguments alone, shared by every ` +
      "conversation, so nothing ran. Give each call an id through `meta` (toolCallId or requestId), or key the tool " +
      "by an argument (binding.requestIdFrom).",
  )
}

const TRANSITIONS = new WeakMap<object, GuardContext>()

/** Not part of the entries: ties the framework's per-call object (options, config, details) to the call's transition. */
export function bindTransition(key: object, tx: GuardContext): void {
  TRANSITIONS.set(key, tx)
}

/** The call's transition for a framework per-call object, or an error saying the tool is not guarded. */
export function lookupTransition(key: unknown, where: string): GuardContext {
  // A WeakMap's get() of a primitive is undefined, not an error.
  const tx = TRANSITIONS.get(key as object)
  if (!tx) {
    throw new GuardedToolError(
      "not_a_guarded_call",
      `transitionOf() got an object that is not the ${where} of a guarded call: pass the very object your tool received.`,
    )
  }
  return tx
}
