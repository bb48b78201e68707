// Tools a task's agent may call. Guards from the core apply inside plans: a `bounded()` tool's boundary error is
// returned to the model as a tool error (it carries `llmMessage`), and a ledgered tool keeps its exactly-once row.
import { MyceliumError } from "../errors.ts"
import type { ToolTransitionBindingInit } from "../ledger/index.ts"
import { safeString } from "../repr.ts"
import type { ToolDef } from "./model.ts"

/**
 * The `execute` of a tool that rethrows every budget refusal of the sub-queries it spawns (`rlm_parallel`): a refusal
 * in one then stops the run where it is met, as it does in `rlm_query`'s, whose very promise the tool returns. The
 * function, not the tool object: a tool spread from rlm_parallel's with an execute of its own may handle a refusal.
 */
export const PASSES_REFUSALS: WeakSet<HarnessTool["execute"]> = /* @__PURE__ */ new WeakSet()

/** What a tool body gets besides its arguments. */
export interface ToolContext {
  readonly signal: AbortSignal
  /** The child run of the task (or RLM sub-query) that called the tool. */
  readonly run_id: string
  readonly parent_run_id: string
  readonly task_id: string
  readonly depth: number
  readonly call_id: string
  /** The run's request permits: `rlm_parallel` runs no more sub-queries at once than there are permits. */
  readonly max_concurrent_requests: number
  /**
   * Runs a sub-query as a child agent at depth + 1 on the same budget, request cap and measurements.
   * Throws `RecursionLimitError` past `max_depth`. Used by `rlmQueryTool`.
   */
  readonly spawn: (request: SubQuery) => Promise<string>
  /**
   * Runs the tool's effect (a charge, a send) after recording that it may have started, on a durable run: a tool
   * that fails or is cut off after this reads as UNKNOWN (reconcile it), never as failed before its effect, which an
   * operator could release `not_executed` and run again. Without a ledger it just runs `fn`.
   */
  readonly sideEffect: <T>(fn: () => T | Promise<T>) => Promise<T>
}

export interface SubQuery {
  readonly prompt: string
  readonly context?: string
}

export interface HarnessTool extends ToolDef {
  execute(args: Record<string, unknown>, context: ToolContext): unknown
  /**
   * With a durable ledger configured, the call's row uses this binding (side-effect class, policy). Without it the
   * call is deduplicated by its run/task/step id only.
   */
  readonly binding?: ToolTransitionBindingInit
}

/** An error a tool throws on purpose for the model to read; the task goes on. Anything else fails the task. */
export class ToolReportedError extends MyceliumError {
  override readonly name = "ToolReportedError"
  override readonly code = "tool_reported_error"
  get llmMessage(): string {
    return this.message
  }
}

/** Errors the model should see and recover from, rather than failing the task. */
export function modelVisibleMessage(err: unknown): string | null {
  if (err && typeof err === "object") {
    const llm = (err as { llmMessage?: unknown }).llmMessage
    if (typeof llm === "string") return llm
    const code = (err as { code?: unknown }).code
    if (code === "recursion_limit" || code === "tool_reported_error") return String((err as Error).message)
  }
  return null
}

/** Tool output as the string the model reads. */
export function toolOutputText(value: unknown): string {
  if (typeof value === "string") return value
  if (value === undefined) return ""
  if (typeof value === "bigint") return value.toString() // as a number reads: 5n gives 5, like 5
  // JSON.stringify returns undefined for a function or symbol and throws on a bigint; the model must still read a
  // string (a cycle still throws, failing the task).
  const json = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))
  return json ?? safeString(value)
}
