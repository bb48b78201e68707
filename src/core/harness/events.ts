// Lifecycle events. Each run (the driver's and every task's child run) numbers its own events 1, 2, 3...;
// `event_id` is `<run_id>#<sequence>`, unique and stable for replay de-duplication.
import type {
  EffectiveBudget,
  ModelRequestSample,
  RunPlanFailure,
  RunReason,
  RunStatus,
  RunUsage,
} from "./types.ts"

export interface EventEnvelope {
  readonly event_id: string
  readonly run_id: string
  readonly sequence: number
  /** ISO-8601 UTC with milliseconds. */
  readonly timestamp: string
  readonly plan_id: string
}

export interface TaskEnvelope extends EventEnvelope {
  readonly task_id: string
  /** The driver run's id; `run_id` is the task's own child run. */
  readonly parent_run_id: string
  readonly depends_on: readonly string[]
}

export interface RunStartedEvent extends EventEnvelope {
  readonly type: "run_started"
  readonly task_ids: readonly string[]
  readonly output_task_id: string
  readonly max_concurrency: number
  readonly budget: EffectiveBudget
  readonly initial_usage: RunUsage
  readonly initial_elapsed_seconds: number
}

export interface TaskStartedEvent extends TaskEnvelope {
  readonly type: "task_started"
  readonly slot: number
  readonly replayed?: boolean
}

export interface ModelRequestFinishedEvent extends TaskEnvelope {
  readonly type: "model_request_finished"
  readonly sample: ModelRequestSample
}

export interface TaskSucceededEvent extends TaskEnvelope {
  readonly type: "task_succeeded"
  readonly usage: RunUsage
  readonly elapsed_ms: number
  /** The length only: events report execution state, never the text. */
  readonly output_chars: number
  readonly replayed?: boolean
}

export interface TaskFailedEvent extends TaskEnvelope {
  readonly type: "task_failed"
  readonly error_type: string
  readonly message: string
  readonly usage: RunUsage
  readonly elapsed_ms: number
}

export interface TaskCancelledEvent extends TaskEnvelope {
  readonly type: "task_cancelled"
  /** The run's stop cause, or `sibling_failed` when another task failed. */
  readonly reason: Exclude<RunReason, "completed" | "task_failed"> | "sibling_failed"
  readonly usage: RunUsage
  readonly elapsed_ms: number
}

export interface RunFinishedEvent extends EventEnvelope {
  readonly type: "run_finished"
  readonly status: RunStatus
  readonly reason: RunReason
  readonly failure: RunPlanFailure | null
  readonly usage: RunUsage
  readonly run_elapsed_ms: number
  readonly model_requests_total: number
  readonly model_requests_coverage: "complete" | "partial"
  /** Only when the run succeeded. */
  readonly output?: string
}

export type TaskEvent =
  | TaskStartedEvent
  | ModelRequestFinishedEvent
  | TaskSucceededEvent
  | TaskFailedEvent
  | TaskCancelledEvent
export type RunEvent = RunStartedEvent | RunFinishedEvent | TaskEvent

/** Distributes a type over a union so each event's own fields are kept. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never
export type RunEventBody = DistributiveOmit<RunStartedEvent | RunFinishedEvent, keyof EventEnvelope>
export type TaskEventBody = DistributiveOmit<TaskEvent, keyof TaskEnvelope>

/** Serialises every stream of one driver run into the host's synchronous sink. */
export class EventBus {
  sinkErrors = 0
  closed = false
  constructor(
    readonly planId: string,
    private readonly sink: ((event: RunEvent) => void) | undefined,
  ) {}

  stream(runId: string): EventStream {
    return new EventStream(this, runId)
  }

  deliver(event: RunEvent): void {
    if (this.closed || !this.sink) return
    try {
      // An async sink's rejection is counted too, instead of going unhandled (which ends a Node process).
      const r = this.sink(event) as unknown
      if (typeof (r as PromiseLike<unknown> | null)?.then === "function")
        (r as PromiseLike<unknown>).then(undefined, () => {
          this.sinkErrors++
        })
    } catch {
      this.sinkErrors++
    }
  }
}

export class EventStream {
  sequence = 0
  /** The task's terminal event went out: nothing follows it. */
  ended = false
  constructor(
    readonly bus: EventBus,
    readonly runId: string,
  ) {}

  emit(body: RunEventBody): RunEvent {
    const seq = ++this.sequence
    const event = Object.freeze({
      event_id: `${this.runId}#${seq}`,
      run_id: this.runId,
      sequence: seq,
      timestamp: new Date().toISOString(),
      plan_id: this.bus.planId,
      ...body,
    }) as RunEvent
    this.bus.deliver(event)
    return event
  }

  emitTask(
    task: { task_id: string; depends_on: readonly string[] },
    parentRunId: string,
    body: TaskEventBody,
  ): void {
    // A request that settles later (a sub-query deaf to its abort, past the drain timeout) still counts in usage
    // and samples, but sends no event. Terminal events are the ones that carry the task's usage.
    if (this.bus.closed || this.ended) return
    this.ended = "usage" in body
    const seq = ++this.sequence
    const event = Object.freeze({
      event_id: `${this.runId}#${seq}`,
      run_id: this.runId,
      sequence: seq,
      timestamp: new Date().toISOString(),
      plan_id: this.bus.planId,
      task_id: task.task_id,
      parent_run_id: parentRunId,
      depends_on: task.depends_on,
      ...body,
    }) as RunEvent
    this.bus.deliver(event)
  }
}
