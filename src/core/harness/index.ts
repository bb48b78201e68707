// The in-run agent harness (`mycelium-runtime/harness`): runtime-neutral, like the rest of src/core, but not part
// of the core entry.
export { InvalidModelResponseError, type RlmOptions, type TaskInfo } from "./agent.ts"
export {
  type AiSdkCallOptions,
  type AiSdkGenerateResult,
  type AiSdkLanguageModel,
  type AiSdkUsageV2,
  type AiSdkUsageV3,
  fromAiSdk,
} from "./ai-sdk.ts"
export {
  BudgetLedger,
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  DEFAULT_REQUEST_LIMIT,
  resolveBudget,
} from "./budget.ts"
export {
  composePrompt,
  DEFAULT_DRAIN_TIMEOUT_SECONDS,
  DEFAULT_MAX_REQUEST_SAMPLES,
  type RunDeps,
  type RunOptions,
  runPlan,
} from "./driver.ts"
export {
  BudgetExceededError,
  type BudgetProblemCode,
  type BudgetReason,
  BudgetValidationError,
  HarnessError,
  type PlanProblem,
  type PlanProblemCode,
  PlanValidationError,
  RecursionLimitError,
  RunFailed,
  ScriptedModelError,
  TaskCancelledError,
} from "./errors.ts"
export type {
  EventEnvelope,
  ModelRequestFinishedEvent,
  RunEvent,
  RunFinishedEvent,
  RunStartedEvent,
  TaskCancelledEvent,
  TaskEnvelope,
  TaskEvent,
  TaskFailedEvent,
  TaskStartedEvent,
  TaskSucceededEvent,
} from "./events.ts"
export type {
  Message,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelSettings,
  RequestContext,
  ResponsePart,
  ResponseUsage,
  ToolCall,
  ToolDef,
} from "./model.ts"
export {
  type CheckedPlan,
  type CheckedTask,
  DEFAULT_MAX_CONCURRENCY,
  MAX_CONCURRENCY_LIMIT,
  MAX_TASK_ID_LENGTH,
  validatePlan,
} from "./plan.ts"
export { type PlanningFailure, type PlanningFailureOptions, planningFailed } from "./planning.ts"
export {
  type RlmParallelToolOptions,
  type RlmToolOptions,
  rlmParallelTool,
  rlmQueryTool,
  type SubQueryOutcome,
} from "./rlm.ts"
export {
  type Script,
  ScriptedModel,
  type ScriptedModelOptions,
  type ScriptStep,
  sleep,
} from "./scripted-model.ts"
export { Semaphore } from "./semaphore.ts"
export { type HarnessTool, type SubQuery, type ToolContext, ToolReportedError } from "./tools.ts"
export type {
  DependencyPlan,
  EffectiveBudget,
  ModelRequestSample,
  RunBudget,
  RunPlan,
  RunPlanFailure,
  RunReason,
  RunResult,
  RunStatus,
  RunTask,
  RunUsage,
  TaskRecord,
  TaskStatus,
} from "./types.ts"
export { addUsage, emptyUsage, USAGE_COUNTERS, UsageAccumulator, type UsageCounter } from "./usage.ts"
