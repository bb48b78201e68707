// When the host's own planning step fails after spending measured usage, the run still ends the harness way: a
// `run_started` / `run_finished` pair carrying that usage once, and a `RunFailed` whose frozen result keeps the
// original failure (or cancellation). No task is dispatched and no budget is replaced.
import { InvalidOptionError } from "../errors.ts"
import { isObject } from "../is-object.ts"
import { checkKind, kindOf, optionsObject } from "../options.ts"
import { clip, safeString } from "../repr.ts"
import { errorMessage, errorType } from "./agent.ts"
import { resolveBudget } from "./budget.ts"
import { type PlanProblem, PlanValidationError, RunFailed } from "./errors.ts"
import { EventBus, type RunEvent } from "./events.ts"
import { deepFreeze } from "./freeze.ts"
import { newPlanId, newRunId } from "./ids.ts"
import { idOption } from "./run-args.ts"
import type { RunBudget, RunResult, RunUsage } from "./types.ts"
import { readUsage, UsageAccumulator, usageProblems } from "./usage.ts"

export interface PlanningFailure {
  /** What the planning step threw. An `AbortError`/`TimeoutError` is kept as a cancellation. */
  readonly error: unknown
  /** Usage the planning step measured; validated like `RunPlan.initial_usage`. */
  readonly initial_usage?: Partial<RunUsage>
  readonly initial_elapsed_seconds?: number
}

export interface PlanningFailureOptions {
  readonly run_id?: string
  readonly plan_id?: string
  readonly budget?: RunBudget
  readonly onEvent?: (event: RunEvent) => void
}

/**
 * Ends a run whose plan never arrived. Returns the `RunFailed` to throw; `result.reason` is `planning_failed`
 * (status `failed`) or `cancelled` (status `stopped`), and `usage` is the planning usage, counted once.
 */
export function planningFailed(failure: PlanningFailure, opts?: PlanningFailureOptions | null): RunFailed {
  if (!isObject(failure))
    throw new InvalidOptionError(
      `planningFailed: pass the failure as { error, initial_usage? }, got ${kindOf(failure)}`,
    )
  const options = optionsObject(opts, "planningFailed options")
  const runId = idOption(options.run_id, "run_id") ?? newRunId()
  const planId = idOption(options.plan_id, "plan_id") ?? newPlanId()
  checkKind(options.onEvent, "onEvent", "function")
  const initialUsage = readUsage(failure.initial_usage) as Partial<RunUsage> | undefined
  const problems: PlanProblem[] = usageProblems(initialUsage).map((message) => ({
    code: "invalid_initial_usage",
    message,
  }))
  const elapsed = failure.initial_elapsed_seconds ?? 0
  if (typeof elapsed !== "number" || !Number.isFinite(elapsed) || elapsed < 0)
    problems.push({
      code: "invalid_initial_elapsed",
      // safeString: a Symbol in a template literal throws a TypeError instead of this typed error.
      message: `initial_elapsed_seconds must be >= 0, got ${clip(safeString(elapsed))}`,
    })
  if (problems.length > 0) throw new PlanValidationError(problems)
  const budget = resolveBudget(options.budget ?? {})
  const usage = new UsageAccumulator()
  usage.add(initialUsage)
  const e = failure.error
  const name = errorType(e)
  const cancelled = name === "AbortError" || name === "TimeoutError"
  const reason = cancelled ? "cancelled" : "planning_failed"
  const stream = new EventBus(planId, options.onEvent ?? undefined).stream(runId)
  stream.emit({
    type: "run_started",
    task_ids: Object.freeze([]),
    output_task_id: "",
    max_concurrency: 0,
    budget,
    initial_usage: usage.snapshot(),
    initial_elapsed_seconds: elapsed,
  })
  // Frozen before the sink sees it: the result shares it.
  const failureRecord = Object.freeze({
    reason,
    task_id: null,
    message: errorMessage(e),
    error_type: name,
  } as const)
  stream.emit({
    type: "run_finished",
    status: cancelled ? "stopped" : "failed",
    reason,
    failure: failureRecord,
    usage: usage.snapshot(),
    run_elapsed_ms: 0,
    model_requests_total: 0,
    model_requests_coverage: "complete",
  })
  const result: RunResult = deepFreeze({
    run_id: runId,
    plan_id: planId,
    output_task_id: "",
    status: cancelled ? "stopped" : "failed",
    reason,
    output: null,
    failure: failureRecord,
    usage: usage.snapshot(),
    run_elapsed_ms: 0,
    total_elapsed_ms: elapsed * 1000,
    model_requests: [],
    model_requests_total: 0,
    model_requests_coverage: "complete",
    tasks: [],
    last_sequence: stream.sequence,
    sink_errors: stream.bus.sinkErrors,
  })
  const err = new RunFailed(result)
  if (e !== undefined) Object.defineProperty(err, "cause", { value: e })
  return err
}
