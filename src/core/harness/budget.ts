// The run's one budget ledger. Every check-and-reserve is one synchronous step (no await between the check and
// the reservation), so concurrent tasks and sub-queries cannot overshoot a limit.
import { isObject } from "../is-object.ts"
import { clip, safeString } from "../repr.ts"
import { BudgetExceededError, type BudgetReason, BudgetValidationError } from "./errors.ts"
import type { EffectiveBudget, RunBudget, RunUsage } from "./types.ts"
import { UsageAccumulator } from "./usage.ts"

export const DEFAULT_REQUEST_LIMIT = 50
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 4
export const DEFAULT_MAX_PARALLEL_TOOL_CALLS = 50

/** Validates a budget and applies the fallbacks (requests 50, concurrent requests 4, parallel tools 50). */
export function resolveBudget(
  budget: RunBudget = {},
  fallbacks: Partial<EffectiveBudget> = {},
): EffectiveBudget {
  // Not a list either: `[]` read as a budget with every field unset, so every limit silently took its default.
  if (!isObject(budget))
    throw new BudgetValidationError("invalid_budget", "(budget)", "a RunBudget must be an object")
  const limit = (field: keyof RunBudget, dflt: number | null): number | null => {
    const v = budget[field]
    // Unset takes the default; an explicit null means "no limit" (pydantic-ai's None).
    if (v === undefined) return dflt
    if (v === null) return null
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
      throw new BudgetValidationError(
        "invalid_limit",
        field,
        `expected null or an integer >= 0, got ${clip(safeString(v))}`,
      )
    return v
  }
  const concurrency = (field: keyof RunBudget, dflt: number): number => {
    const v = budget[field] ?? dflt
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1)
      throw new BudgetValidationError(
        "invalid_concurrency",
        field,
        `expected null or an integer >= 1, got ${clip(safeString(v))}`,
      )
    return v
  }
  const d = budget.deadline_seconds ?? fallbacks.deadline_seconds ?? null
  if (d !== null && (typeof d !== "number" || !Number.isFinite(d) || d <= 0))
    throw new BudgetValidationError(
      "invalid_deadline",
      "deadline_seconds",
      `expected null or > 0, got ${clip(safeString(d))}`,
    )
  return Object.freeze({
    request_limit: limit("request_limit", DEFAULT_REQUEST_LIMIT),
    tool_calls_limit: limit("tool_calls_limit", null),
    input_tokens_limit: limit("input_tokens_limit", null),
    output_tokens_limit: limit("output_tokens_limit", null),
    total_tokens_limit: limit("total_tokens_limit", null),
    max_concurrent_requests: concurrency(
      "max_concurrent_requests",
      fallbacks.max_concurrent_requests ?? DEFAULT_MAX_CONCURRENT_REQUESTS,
    ),
    max_parallel_tool_calls: concurrency(
      "max_parallel_tool_calls",
      fallbacks.max_parallel_tool_calls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    ),
    deadline_seconds: d,
  })
}

/** Committed usage plus open reservations, shared by every task and sub-query of one run. */
export class BudgetLedger {
  readonly committed = new UsageAccumulator()
  reservedRequests = 0
  reservedToolCalls = 0

  constructor(readonly budget: EffectiveBudget) {}

  /**
   * A stop reason if the run may not dispatch anything at all (checked once at start). `replayed`: the requests were
   * sent before a crash (`precharge`), so only more than the limit refuses; a resume that only replays sends none.
   */
  startRefusal(replayed = false): { reason: BudgetReason; message: string } | null {
    const b = this.budget
    const c = this.committed.counts
    if (b.request_limit !== null && c.requests >= b.request_limit + (replayed ? 1 : 0))
      return { reason: "request_limit", message: this.requestMessage() }
    // Prior usage over any token limit must stop the run before its first request.
    const tokens = this.tokenRefusal()
    if (tokens) return tokens
    if (b.tool_calls_limit !== null && c.tool_calls > b.tool_calls_limit)
      return {
        reason: "tool_calls_limit",
        message: `prior tool usage (${c.tool_calls}) is above the tool_calls_limit of ${b.tool_calls_limit}`,
      }
    return null
  }

  /** Reserves one request or throws the reason it is refused. Synchronous on purpose. */
  reserveRequest(): void {
    const b = this.budget
    if (b.request_limit !== null && this.committed.counts.requests + this.reservedRequests >= b.request_limit)
      throw new BudgetExceededError("request_limit", this.requestMessage())
    // Output included: it is only checked after a response, so a limit another request already crossed must still
    // refuse this one instead of letting the run pay for it.
    const tokens = this.tokenRefusal()
    if (tokens) throw new BudgetExceededError(tokens.reason, tokens.message)
    this.reservedRequests++
  }

  /** Moves a sent request's reservation into the committed counters, whatever its outcome. */
  settleRequest(usage?: Partial<RunUsage> | null): void {
    this.reservedRequests--
    this.committed.inc("requests")
    if (usage) this.committed.add({ ...usage, requests: 0, tool_calls: 0 })
  }

  /** A request paid for before a crash, replayed instead of sent: it counts, with its reported usage. */
  chargeReplay(usage?: Partial<RunUsage> | null): void {
    this.reservedRequests++
    this.settleRequest(usage)
  }

  /** After a response: a token limit the committed usage now exceeds, or null. */
  afterResponse(): { reason: BudgetReason; message: string } | null {
    return this.tokenRefusal()
  }

  /**
   * Reserves `k` tool calls of one batch, or throws: a batch that would exceed the limit executes none of its
   * calls. Landing exactly on the limit is allowed.
   */
  reserveToolCalls(k: number): void {
    const b = this.budget
    const used = this.committed.counts.tool_calls + this.reservedToolCalls
    if (b.tool_calls_limit !== null && used + k > b.tool_calls_limit)
      throw new BudgetExceededError(
        "tool_calls_limit",
        `The next tool call(s) would exceed the tool_calls_limit of ${b.tool_calls_limit} (tool_calls=${used})`,
      )
    this.reservedToolCalls += k
  }

  /** One reserved call actually starts executing: it counts. */
  commitToolCall(): void {
    this.reservedToolCalls--
    this.committed.inc("tool_calls")
  }

  /** Reserved calls that never started (cancelled or failed validation) give their reservation back. */
  releaseToolCalls(n: number): void {
    this.reservedToolCalls -= n
  }

  private requestMessage(): string {
    // Requests still in flight were sent: without them a refusal read "limit of 2 (requests=1)".
    const sent = this.committed.counts.requests + this.reservedRequests
    return `The next request would exceed the request_limit of ${this.budget.request_limit} (requests=${sent})`
  }

  private tokenRefusal(): { reason: BudgetReason; message: string } | null {
    const b = this.budget
    const c = this.committed
    const checks: Array<[BudgetReason, number | null, number]> = [
      ["input_tokens_limit", b.input_tokens_limit, c.counts.input_tokens],
      ["output_tokens_limit", b.output_tokens_limit, c.counts.output_tokens],
      ["total_tokens_limit", b.total_tokens_limit, c.totalTokens],
    ]
    for (const [reason, lim, used] of checks)
      if (lim !== null && used > lim)
        return {
          reason,
          message: `Exceeded the ${reason} of ${lim} (${reason.replace("_limit", "")}=${used})`,
        }
    return null
  }
}
