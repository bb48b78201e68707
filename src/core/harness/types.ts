// Public data shapes. Field names stay snake_case, as in the Python original's wire form, so fixtures and events
// map 1:1 between the two.

/** Which shared limit refused a request or tool call. */
export type BudgetReason =
  | "request_limit"
  | "tool_calls_limit"
  | "input_tokens_limit"
  | "output_tokens_limit"
  | "total_tokens_limit"

/** One unit of work: a fresh agent run whose prompt gets only its direct dependencies' outputs. */
export interface RunTask {
  readonly task_id: string
  readonly prompt: string
  /** Order is kept: it fixes the order of dependency outputs in the prompt. */
  readonly depends_on?: readonly string[]
}

/** A dependency DAG of tasks whose `output_task_id` is its sole sink. */
export interface DependencyPlan {
  readonly tasks: readonly RunTask[]
  readonly output_task_id: string
  /** Task slots, 1..64. Default 4. */
  readonly max_concurrency?: number
  /** Echoed in every event and the result. Default `plan:<32 hex>`. */
  readonly plan_id?: string
}

/** What a host hands to `runPlan`: the plan plus what the run already spent before it. */
export interface RunPlan {
  readonly dependency_plan: DependencyPlan
  /** Charged to the shared budget before the first dispatch and included once in the final usage. */
  readonly initial_usage?: Partial<RunUsage>
  /** Charged against the deadline. */
  readonly initial_elapsed_seconds?: number
}

/** Counters in pydantic-ai's vocabulary. `total_tokens` is derived: input + output. */
export interface RunUsage {
  readonly requests: number
  readonly tool_calls: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_write_tokens: number
  readonly cache_read_tokens: number
  readonly input_audio_tokens: number
  readonly cache_audio_read_tokens: number
  readonly output_audio_tokens: number
  readonly details: Readonly<Record<string, number>>
  readonly total_tokens: number
}

/** Shared limits for the whole run: every task and every RLM sub-query draw on one ledger. */
export interface RunBudget {
  /** Default 50; `null` means no limit. Checked before each request. */
  readonly request_limit?: number | null
  /** Checked before each tool batch: a batch that would exceed it executes none of its calls. */
  readonly tool_calls_limit?: number | null
  readonly input_tokens_limit?: number | null
  readonly output_tokens_limit?: number | null
  readonly total_tokens_limit?: number | null
  /** Run-wide cap on model requests in flight. Default 4. */
  readonly max_concurrent_requests?: number | null
  /** Cap on tool calls from one response running at once; the rest queue in call order. Default 50. */
  readonly max_parallel_tool_calls?: number | null
  /** Driver deadline, including `initial_elapsed_seconds`. */
  readonly deadline_seconds?: number | null
}

/** The budget after defaults: what `run_started` reports. */
export interface EffectiveBudget {
  readonly request_limit: number | null
  readonly tool_calls_limit: number | null
  readonly input_tokens_limit: number | null
  readonly output_tokens_limit: number | null
  readonly total_tokens_limit: number | null
  readonly max_concurrent_requests: number
  readonly max_parallel_tool_calls: number
  readonly deadline_seconds: number | null
}

export type RunStatus = "succeeded" | "failed" | "stopped"
/** `planning_failed` only comes from `planningFailed()`: the host's planning step failed before any plan ran. */
export type RunReason =
  | "completed"
  | "task_failed"
  | "planning_failed"
  | BudgetReason
  | "deadline"
  | "cancelled"

/**
 * Why a run did not succeed. `task_id` is null for a deadline, a cancellation, a start-time refusal or a store outage
 * while a durable run lists its rows.
 */
export interface RunPlanFailure {
  readonly reason: Exclude<RunReason, "completed">
  readonly task_id: string | null
  readonly message: string
  readonly error_type: string | null
}

/** One model request, measured around `ModelClient.request` only. */
export interface ModelRequestSample {
  readonly index: number
  readonly task_id: string
  readonly run_id: string
  readonly depth: number
  readonly started_ms: number
  readonly client_request_elapsed_ms: number
  readonly outcome: "ok" | "error" | "cancelled"
  readonly error_type?: string
  readonly model_name: string
  readonly provider_name: string | null
  /** null when the provider reported none; never estimated. */
  readonly input_tokens: number | null
  readonly output_tokens: number | null
  readonly cache_read_tokens?: number | null
  readonly finish_reason?: string
}

export type TaskStatus = "succeeded" | "failed" | "cancelled" | "not_started"

export interface TaskRecord {
  readonly task_id: string
  readonly run_id: string | null
  readonly status: TaskStatus
  readonly depends_on: readonly string[]
  readonly started_ms: number | null
  readonly elapsed_ms: number | null
  readonly usage: RunUsage
  readonly error_type?: string
  readonly error_message?: string
  /** Present only when the whole plan succeeded. */
  readonly output?: string
  /** True when a durable ledger replayed the task's finished output instead of running it. */
  readonly replayed?: boolean
}

export interface RunResult {
  readonly run_id: string
  readonly plan_id: string
  readonly output_task_id: string
  readonly status: RunStatus
  readonly reason: RunReason
  /** The output task's text iff the run succeeded; failed or stopped runs never carry a partial answer. */
  readonly output: string | null
  readonly failure: RunPlanFailure | null
  readonly usage: RunUsage
  /** Monotonic wall time of this invocation; excludes `initial_elapsed_seconds`. */
  readonly run_elapsed_ms: number
  readonly total_elapsed_ms: number
  readonly model_requests: readonly ModelRequestSample[]
  readonly model_requests_total: number
  readonly model_requests_coverage: "complete" | "partial"
  readonly tasks: readonly TaskRecord[]
  readonly last_sequence: number
  /** Number of times `onEvent` threw or its promise rejected before the run settled; the run goes on regardless. */
  readonly sink_errors: number
  /** Set when tasks did not settle within the drain timeout; each still got its terminal event first. */
  readonly drain_incomplete?: boolean
}
