// One root for the harness's errors, under the package's MyceliumError.
import { MyceliumError } from "../errors.ts"
import type { BudgetReason, RunPlanFailure, RunResult } from "./types.ts"

export type { BudgetReason } from "./types.ts"

/** Root of every harness error: a stable `name` and a snake_case `code`. */
export class HarnessError extends MyceliumError {
  override readonly name: string = "HarnessError"
  override readonly code: string = "harness_error"
}

/** One problem found in a plan; `validatePlan` collects every one before throwing. */
export interface PlanProblem {
  readonly code: PlanProblemCode
  readonly message: string
  readonly task_id?: string
  readonly cycle?: readonly string[]
  readonly sinks?: readonly string[]
}

export type PlanProblemCode =
  | "invalid_plan"
  | "empty_plan"
  | "invalid_task_id"
  | "empty_prompt"
  | "duplicate_task_id"
  | "self_dependency"
  | "unknown_dependency"
  | "duplicate_dependency"
  | "cycle"
  | "unknown_output_task"
  | "output_not_sole_sink"
  | "invalid_max_concurrency"
  | "invalid_initial_usage"
  | "invalid_initial_elapsed"

// A hostile plan can hold a problem per dependency: the message lists the first ones, `details` keeps them all.
const MAX_LISTED_PROBLEMS = 50

/**
 * The plan cannot run. Thrown before anything runs: no run exists, so no events are emitted and no model is called.
 * `code` is the first problem's code; `details.problems` holds all of them, the message the first 50.
 */
export class PlanValidationError extends HarnessError {
  override readonly name = "PlanValidationError"
  override readonly code: PlanProblemCode
  readonly details: { readonly problems: readonly PlanProblem[] }
  constructor(problems: readonly PlanProblem[]) {
    const rest = problems.length - MAX_LISTED_PROBLEMS
    super(
      `Invalid plan (${problems.length} problem${problems.length === 1 ? "" : "s"}): ` +
        problems
          .slice(0, MAX_LISTED_PROBLEMS)
          .map((p) => `${p.code}: ${p.message}`)
          .join("; ") +
        (rest > 0 ? `; and ${rest} more (see details.problems)` : "") +
        ". Fix the plan and submit it again; nothing was dispatched.",
    )
    this.code = problems[0]?.code ?? "invalid_plan"
    this.details = Object.freeze({ problems: Object.freeze([...problems]) })
  }
  /** Every problem with this code. */
  problems(code: PlanProblemCode): PlanProblem[] {
    return this.details.problems.filter((p) => p.code === code)
  }
}

export type BudgetProblemCode =
  | "invalid_limit"
  | "invalid_concurrency"
  | "invalid_deadline"
  | "invalid_budget"

/** A `RunBudget` field is out of range. Thrown before anything runs. */
export class BudgetValidationError extends HarnessError {
  override readonly name = "BudgetValidationError"
  override readonly code: BudgetProblemCode
  readonly field: string
  constructor(code: BudgetProblemCode, field: string, message: string) {
    super(`Invalid RunBudget.${field}: ${message}. Pass a valid value or leave it unset for the default.`)
    this.code = code
    this.field = field
  }
}

/**
 * The plan failed or stopped. `result` is the deeply frozen snapshot taken at the terminal event; it never holds
 * a task's output text.
 */
export class RunFailed extends HarnessError {
  override readonly name = "RunFailed"
  override readonly code = "run_failed"
  readonly result: RunResult
  constructor(result: RunResult) {
    const f = result.failure as RunPlanFailure
    super(
      `Run ${result.run_id} ${result.status} (${result.reason})` +
        (f.task_id ? ` in task '${f.task_id}'` : "") +
        `: ${f.message}. No partial answer is returned; inspect error.result for usage and per-task status.`,
    )
    this.result = result
  }
  get reason(): RunResult["reason"] {
    return this.result.reason
  }
  get run_id(): string {
    return this.result.run_id
  }
  get usage(): RunResult["usage"] {
    return this.result.usage
  }
}

/** Thrown inside a task when a shared budget refuses more work; the driver turns it into the run's stop cause. */
export class BudgetExceededError extends HarnessError {
  override readonly name = "BudgetExceededError"
  override readonly code: string
  constructor(
    readonly reason: BudgetReason,
    message: string,
  ) {
    super(message)
    this.code = reason
  }
}

/** A task was cancelled because the run is stopping (another cause came first). */
export class TaskCancelledError extends HarnessError {
  override readonly name = "TaskCancelledError"
  override readonly code = "task_cancelled"
}

/** An RLM sub-query asked for a depth beyond `max_depth`; returned to the model as a tool error. */
export class RecursionLimitError extends HarnessError {
  override readonly name = "RecursionLimitError"
  override readonly code = "recursion_limit"
}

/** A scripted model ran out of steps or was scripted to fail. */
export class ScriptedModelError extends HarnessError {
  override readonly name = "ScriptedModelError"
  override readonly code = "scripted_model_error"
}
