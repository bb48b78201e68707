// The DAG driver: task slots without waves, one shared budget, fail-fast with cancel-and-drain, a monotonic
// deadline, ordered events, and no partial answer unless the whole plan succeeded.
import type { ActionLedger } from "../ledger/index.ts"
import {
  type AgentContext,
  errorMessage,
  errorType,
  type RlmOptions,
  runAgent,
  type SharedRun,
  type TaskInfo,
} from "./agent.ts"
import { BudgetLedger, resolveBudget } from "./budget.ts"
import { durableTaskKey, precharge, runDurableTask } from "./durable.ts"
import { BudgetExceededError, HarnessError, RunFailed, TaskCancelledError } from "./errors.ts"
import { EventBus, type EventStream, type TaskCancelledEvent } from "./events.ts"
import { deepFreeze } from "./freeze.ts"
import { newRunId } from "./ids.ts"
import { MinHeap } from "./min-heap.ts"
import type { ModelClient, ModelSettings } from "./model.ts"
import { type CheckedTask, validatePlan } from "./plan.ts"
import { type RunOptions, readRunArgs, toolList } from "./run-args.ts"

export type { RunOptions }

import { Semaphore } from "./semaphore.ts"
import { startTimer, type Timer } from "./timer.ts"
import type { HarnessTool } from "./tools.ts"
import type {
  DependencyPlan,
  RunBudget,
  RunPlan,
  RunPlanFailure,
  RunReason,
  RunResult,
  RunUsage,
  TaskRecord,
} from "./types.ts"
import { UsageAccumulator } from "./usage.ts"

export { DEFAULT_DRAIN_TIMEOUT_SECONDS, DEFAULT_MAX_REQUEST_SAMPLES } from "./run-args.ts"

/** What the host supplies: the model, the tools and instructions per task, the budget, optionally a ledger. */
export interface RunDeps {
  readonly model: ModelClient
  /** "provider:model" sent with every request. Default "unknown:model". */
  readonly model_name?: string
  readonly instructions?: string | ((task: TaskInfo) => string | undefined)
  readonly tools?: readonly HarnessTool[] | ((task: TaskInfo) => readonly HarnessTool[])
  readonly settings?: ModelSettings
  readonly budget?: RunBudget
  /**
   * Host or model configuration used where the budget leaves a cap unset, before the built-in 4 requests and 50
   * parallel tool calls.
   */
  readonly concurrency_defaults?: {
    readonly max_concurrent_requests?: number
    readonly max_parallel_tool_calls?: number
  }
  readonly rlm?: RlmOptions
  /**
   * Makes the run durable: every task, model request and tool call is a ledger row keyed by run, task and step.
   * Running the same plan again with the same `run_id` replays what finished instead of paying for it again.
   */
  readonly ledger?: ActionLedger
  /** Samples kept in `model_requests` (the first N by start). Default 256. */
  readonly max_request_samples?: number
}

interface TaskState {
  readonly spec: CheckedTask
  status: "pending" | "running" | "succeeded" | "failed" | "cancelled"
  remainingDeps: number
  runId: string | null
  slot: number
  controller: AbortController | null
  stream: EventStream | null
  /** The error that fails this task, known before the task settles (`SharedRun.failing`). */
  fatal?: unknown
  usage: UsageAccumulator
  startedAt: number | null
  elapsed: number | null
  output: string | null
  errorType?: string
  errorMessage?: string
  replayed: boolean
  started: boolean
}

interface StopCause {
  readonly reason: Exclude<RunReason, "completed">
  readonly task_id: string | null
  readonly message: string
  readonly error_type: string | null
}

/**
 * Runs a dependency plan. Validation errors (`PlanValidationError`, `BudgetValidationError`, and
 * `InvalidOptionError` for deps and options of the wrong kind) are thrown synchronously, before any event. The
 * promise resolves only on success and rejects with `RunFailed` (whose `result` is deeply frozen) when the plan fails
 * or stops, including on cancellation; it settles only after every task has drained, or after
 * `drain_timeout_seconds` with `drain_incomplete` set.
 */
export function runPlan(
  plan: RunPlan | DependencyPlan,
  deps: RunDeps,
  options: RunOptions = {},
): Promise<RunResult> {
  const checked = validatePlan(plan)
  const args = readRunArgs(deps, options)
  const { signal, maxSamples, drainMs, rlm, now } = args
  const budget = resolveBudget(deps.budget ?? {}, {
    ...deps.concurrency_defaults,
    ...(args.deadlineSeconds !== undefined ? { deadline_seconds: args.deadlineSeconds } : {}),
  })
  const runId = args.runId ?? newRunId()
  const startedAt = now()

  const bus = new EventBus(checked.plan_id, args.onEvent)
  const driverStream = bus.stream(runId)
  const ledger = new BudgetLedger(budget)
  const shared: SharedRun = {
    runId,
    model: deps.model,
    modelName: args.modelName,
    settings: deps.settings,
    budget: ledger,
    requestPermits: new Semaphore(budget.max_concurrent_requests),
    maxParallelToolCalls: budget.max_parallel_tool_calls,
    drainMs,
    maxSamples,
    samples: [],
    samplesTotal: 0,
    now,
    startedAt,
    ledger: deps.ledger ?? null,
    precharged: new Map(),
    rlm,
    failing: () => {},
    pastDeadline: () => false,
  }

  const tasks: TaskState[] = checked.tasks.map((spec) => ({
    spec,
    status: "pending",
    remainingDeps: spec.deps.length,
    runId: null,
    slot: -1,
    controller: null,
    stream: null,
    usage: new UsageAccumulator(),
    startedAt: null,
    elapsed: null,
    output: null,
    replayed: false,
    started: false,
  }))
  const byId = new Map(tasks.map((t) => [t.spec.task_id, t]))
  const outputTask = byId.get(checked.output_task_id) as TaskState

  return new Promise<RunResult>((resolve, reject) => {
    let cause: StopCause | null = null
    let running = 0
    let finished = false
    let deadlineTimer: Timer | null = null
    let drainTimer: Timer | null = null
    const freeSlots: number[] = []
    for (let i = checked.max_concurrency - 1; i >= 0; i--) freeSlots.push(i)
    // Ready tasks ordered by declaration index: a binary heap keeps 1,000-task plans cheap.
    const ready = new MinHeap()
    for (const t of tasks) if (t.remainingDeps === 0) ready.push(t.spec.index)

    driverStream.emit({
      type: "run_started",
      task_ids: Object.freeze(checked.tasks.map((t) => t.task_id)),
      output_task_id: checked.output_task_id,
      max_concurrency: checked.max_concurrency,
      budget,
      initial_usage: checked.initial_usage,
      initial_elapsed_seconds: checked.initial_elapsed_seconds,
    })
    ledger.committed.add(checked.initial_usage)

    const onAbort = () =>
      stop({ reason: "cancelled", task_id: null, message: "the run was cancelled", error_type: null })
    const refusal = ledger.startRefusal()
    if (refusal) {
      cause = {
        reason: refusal.reason,
        task_id: null,
        message: refusal.message,
        error_type: "BudgetExceededError",
      }
    } else if (
      budget.deadline_seconds !== null &&
      checked.initial_elapsed_seconds >= budget.deadline_seconds
    ) {
      cause = {
        reason: "deadline",
        task_id: null,
        message: `initial_elapsed_seconds (${checked.initial_elapsed_seconds}) already reaches the deadline of ${budget.deadline_seconds}s`,
        error_type: null,
      }
    } else if (signal?.aborted) {
      cause = {
        reason: "cancelled",
        task_id: null,
        message: "the run was cancelled before it started",
        error_type: null,
      }
    }
    if (cause) return finish()

    signal?.addEventListener("abort", onAbort, { once: true })
    if (budget.deadline_seconds !== null) {
      const remainingMs = (budget.deadline_seconds - checked.initial_elapsed_seconds) * 1000
      const onDeadline = () =>
        stop({
          reason: "deadline",
          task_id: null,
          message: `the deadline of ${budget.deadline_seconds}s (including ${checked.initial_elapsed_seconds}s before this plan) passed`,
          error_type: null,
        })
      deadlineTimer = startTimer(remainingMs, onDeadline)
      // The timer fires only when the event loop gets to it: work that kept the loop busy past the deadline (a
      // synchronous tool, a cached model) would otherwise start tasks and send requests after it.
      shared.pastDeadline = () => {
        if (now() - startedAt < remainingMs) return false
        onDeadline()
        return true
      }
    }
    shared.failing = (id, e) => {
      const t = byId.get(id) as TaskState
      t.fatal = e
      stop(causeOf(id, e))
      // Its own other work stops too: a sibling sub-query of its batch started tools after the stop while the error
      // travelled back up (on a durable run, for as long as the store took to write the failed row). Only the cause
      // gets here: a stop has already aborted every other task.
      t.controller?.abort(e)
    }
    // What a durable run will replay is charged before its first task, and may already stop it as it stopped the
    // crashed run; a stop while the store lists (an abort, the deadline) has already ended the run (`stop`). A run id
    // of its own (random) has no rows yet: nothing to list.
    if (!shared.ledger || args.runId === undefined) pump()
    else
      precharge(shared.ledger, runId, checked.tasks, ledger, shared.precharged).then(
        () => {
          const refusal = ledger.startRefusal(true)
          if (refusal) stop({ ...refusal, task_id: null, error_type: "BudgetExceededError" })
          pump()
        },
        (e: unknown) => stop(causeOf(null, e)),
      )

    function pump(): void {
      while (!cause && freeSlots.length > 0 && ready.size > 0 && !shared.pastDeadline())
        start(tasks[ready.pop()]!)
      if (running === 0 && (cause || outputTask.status === "succeeded")) finish()
    }

    function start(t: TaskState): void {
      running++
      t.status = "running"
      t.slot = freeSlots.pop() as number
      t.runId = newRunId()
      t.controller = new AbortController()
      t.startedAt = now()
      const stream = bus.stream(t.runId)
      t.stream = stream
      const info: TaskInfo = { task_id: t.spec.task_id, prompt: t.spec.prompt, depends_on: t.spec.depends_on }
      const signal = t.controller.signal
      // Without a ledger the start event goes out now; the durable path first learns whether the task replays.
      if (!shared.ledger) emitStarted(t, stream)
      const work = (async () => {
        // Host factories run inside the task, so one that throws fails that task instead of the driver.
        const ctx: AgentContext = {
          shared,
          runId: t.runId as string,
          parentRunId: runId,
          task: info,
          depth: 0,
          signal,
          stream,
          usage: t.usage,
          key: durableTaskKey(runId, t.spec.task_id),
          instructions: typeof deps.instructions === "function" ? deps.instructions(info) : deps.instructions,
          tools: typeof deps.tools === "function" ? toolList(deps.tools(info) ?? []) : (deps.tools ?? []),
          maxTurns: null,
        }
        const prompt = composePrompt(t.spec, byId)
        if (!shared.ledger) return await runAgent(ctx, prompt)
        return await runDurableTask(ctx, t, prompt, () => emitStarted(t, stream))
      })()
      work.then(
        // A non-string would throw inside settle() and leave the run unsettled forever: fail the task instead.
        (text) =>
          typeof text === "string"
            ? settle(t, stream, signal, true, text)
            : settle(t, stream, signal, false, new HarnessError("the task produced no text output")),
        (err) => settle(t, stream, signal, false, err),
      )
    }

    function emitStarted(t: TaskState, stream: ReturnType<EventBus["stream"]>): void {
      if (t.started) return
      t.started = true
      stream.emitTask(t.spec, runId, {
        type: "task_started",
        slot: t.slot,
        ...(t.replayed ? { replayed: true } : {}),
      })
    }

    function settle(
      t: TaskState,
      stream: ReturnType<EventBus["stream"]>,
      signal: AbortSignal,
      ok: boolean,
      value: unknown,
    ): void {
      if (t.status !== "running") return // a task the drain gave up on settled in finish()
      // A durable task's start waits for its ledger row, so a host factory that threw has not sent it yet: every
      // terminal event follows a start.
      emitStarted(t, stream)
      running--
      freeSlots.push(t.slot)
      t.elapsed = now() - (t.startedAt as number)
      const usage = t.usage.snapshot()
      const elapsed_ms = t.elapsed
      // The task that stopped the run is aborted too (`failing`), yet reports its own failure.
      const failing = "fatal" in t
      if (signal.aborted && !failing) {
        // Stopped from outside (another task's failure, a budget trip elsewhere, the deadline, the caller): any
        // output that arrived after the abort is discarded.
        t.status = "cancelled"
        const reason: TaskCancelledEvent["reason"] =
          cause?.reason === "task_failed"
            ? "sibling_failed"
            : ((cause?.reason ?? "cancelled") as TaskCancelledEvent["reason"])
        stream.emitTask(t.spec, runId, { type: "task_cancelled", reason, usage, elapsed_ms })
      } else if (ok && !failing) {
        t.status = "succeeded"
        t.output = value as string
        stream.emitTask(t.spec, runId, {
          type: "task_succeeded",
          usage,
          elapsed_ms,
          output_chars: t.output.length,
          ...(t.replayed ? { replayed: true } : {}),
        })
        for (const d of t.spec.dependents) {
          const dep = tasks[d]!
          if (--dep.remainingDeps === 0) ready.push(d)
        }
      } else {
        // A budget trip is a stop, not a failure: the task is cancelled with the budget's reason.
        const c = causeOf(t.spec.task_id, failing ? t.fatal : value)
        t.status = c.reason === "task_failed" ? "failed" : "cancelled"
        t.errorType = c.error_type as string
        t.errorMessage = c.message
        stop(c)
        stream.emitTask(
          t.spec,
          runId,
          t.status === "failed"
            ? { type: "task_failed", error_type: t.errorType, message: t.errorMessage, usage, elapsed_ms }
            : { type: "task_cancelled", reason: c.reason as TaskCancelledEvent["reason"], usage, elapsed_ms },
        )
      }
      pump()
    }

    function stop(c: StopCause): void {
      if (finished) return
      if (!cause) cause = c // first cause wins
      // Not the task whose failure is the cause (`failing`): it is failing, not cancelled.
      for (const t of tasks)
        if (t.status === "running" && t.spec.task_id !== cause.task_id && !t.controller?.signal.aborted)
          t.controller?.abort(new TaskCancelledError(`task cancelled: ${cause.reason}`))
      if (running > 0 && drainTimer === null) drainTimer = startTimer(drainMs, () => finish(true))
      // Settling is asynchronous; with nothing running the run ends now.
      if (running === 0) queueMicrotask(pump)
    }

    function finish(drainIncomplete = false): void {
      if (finished) return
      finished = true
      deadlineTimer?.clear()
      drainTimer?.clear()
      signal?.removeEventListener("abort", onAbort)
      // Tasks the drain gave up on end here, so every started task has its terminal event before run_finished.
      const late = tasks.filter((t) => t.status === "running")
      for (const t of late)
        settle(t, t.stream as EventStream, (t.controller as AbortController).signal, false, t.fatal)
      const succeeded = !cause && outputTask.status === "succeeded"
      const reason: RunReason = cause?.reason ?? "completed"
      const status = succeeded ? "succeeded" : reason === "task_failed" ? "failed" : "stopped"
      // Frozen before run_finished reaches the sink: the result shares this object, and a sink that edited it (to
      // redact a message, say) rewrote the "deeply frozen" result the caller gets.
      const failure: RunPlanFailure | null = cause
        ? Object.freeze({
            reason: cause.reason,
            task_id: cause.task_id,
            message: drainIncomplete
              ? `${cause.message} (drain incomplete: tasks still running)`
              : cause.message,
            error_type: cause.error_type,
          })
        : null
      const run_elapsed_ms = now() - startedAt
      const usage: RunUsage = totalUsage(checked.initial_usage, tasks)
      const model_requests = shared.samples.filter((s) => s !== undefined)
      // Partial only when the bound dropped samples: a request the drain gave up on never had one to drop.
      const coverage = shared.samplesTotal > maxSamples ? "partial" : "complete"
      const output = succeeded ? (outputTask.output as string) : null
      driverStream.emit({
        type: "run_finished",
        status,
        reason,
        failure,
        usage,
        run_elapsed_ms,
        model_requests_total: shared.samplesTotal,
        model_requests_coverage: coverage,
        ...(succeeded ? { output: output as string } : {}),
      })
      bus.closed = true
      for (const t of late) t.controller?.abort(new TaskCancelledError("run finished"))
      const result: RunResult = {
        run_id: runId,
        plan_id: checked.plan_id,
        output_task_id: checked.output_task_id,
        status,
        reason,
        output,
        failure,
        usage,
        run_elapsed_ms,
        total_elapsed_ms: checked.initial_elapsed_seconds * 1000 + run_elapsed_ms,
        model_requests,
        model_requests_total: shared.samplesTotal,
        model_requests_coverage: coverage,
        tasks: tasks.map((t) => taskRecord(t, succeeded, startedAt)),
        last_sequence: driverStream.sequence,
        sink_errors: 0,
        ...(drainIncomplete ? { drain_incomplete: true } : {}),
      }
      // A microtask later: an async sink that rejected on run_finished, or earlier, is counted by then.
      queueMicrotask(() => {
        const r = deepFreeze({ ...result, sink_errors: bus.sinkErrors })
        if (succeeded) resolve(r)
        else reject(new RunFailed(r))
      })
    }
  })
}

/** The stop a task's error causes: a budget trip stops the run, anything else fails it. */
function causeOf(task_id: string | null, e: unknown): StopCause {
  return e instanceof BudgetExceededError
    ? { reason: e.reason, task_id, message: e.message, error_type: e.name }
    : {
        reason: "task_failed",
        task_id,
        message: errorMessage(e),
        error_type: errorType(e),
      }
}

/** Prompt for a task: its own prompt, then each direct dependency's output in `depends_on` order. */
export function composePrompt(
  task: CheckedTask,
  byId: ReadonlyMap<string, { output: string | null }>,
): string {
  if (task.depends_on.length === 0) return task.prompt
  const blocks = task.depends_on.map((d) => `### ${d}\n${byId.get(d)?.output ?? ""}`)
  return `${task.prompt}\n\nDependency outputs:\n\n${blocks.join("\n\n")}`
}

function totalUsage(initial: RunUsage, tasks: readonly TaskState[]): RunUsage {
  const acc = new UsageAccumulator()
  acc.add(initial)
  for (const t of tasks) acc.add(t.usage.snapshot())
  return acc.snapshot()
}

function taskRecord(t: TaskState, planSucceeded: boolean, runStart: number): TaskRecord {
  return {
    task_id: t.spec.task_id,
    run_id: t.runId,
    status: t.status === "pending" ? "not_started" : t.status === "running" ? "cancelled" : t.status,
    depends_on: t.spec.depends_on,
    started_ms: t.startedAt === null ? null : t.startedAt - runStart,
    elapsed_ms: t.elapsed,
    usage: t.usage.snapshot(),
    ...(t.errorType !== undefined ? { error_type: t.errorType } : {}),
    ...(t.errorMessage !== undefined ? { error_message: t.errorMessage } : {}),
    ...(planSucceeded && t.output !== null ? { output: t.output } : {}),
    ...(t.replayed ? { replayed: true } : {}),
  }
}
