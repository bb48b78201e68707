// A scripted fake model for tests and demos: per-task scripts, delays that honour the abort signal, injected
// errors and usage. It counts requests in flight so tests can prove caps and draining.
import { ScriptedModelError } from "./errors.ts"
import type { ModelClient, ModelRequest, ModelResponse, ResponsePart, ResponseUsage } from "./model.ts"

/** One scripted reply. `text` ends the task; `tool_calls` asks for a tool batch. */
export interface ScriptStep {
  readonly text?: string
  readonly tool_calls?: ReadonlyArray<{ name: string; args?: Record<string, unknown>; id?: string }>
  readonly usage?: ResponseUsage
  /** Milliseconds before the reply; an abort during the wait rejects at once. */
  readonly delay_ms?: number
  /** Reject instead of replying. */
  readonly error?: Error | string
  readonly model_name?: string
  readonly provider_name?: string
  readonly finish_reason?: string
}

export type Script =
  | readonly ScriptStep[]
  | ((request: ModelRequest, call: number) => ScriptStep | Promise<ScriptStep>)

export interface ScriptedModelOptions {
  /** Scripts by task id; an RLM sub-query of task T at depth d uses `T@d`. Each (sub-)run counts its own calls. */
  readonly byTask?: Readonly<Record<string, Script>>
  /** Used for any task without its own script. Default: reply `done:<task_id>`. */
  readonly fallback?: Script
  readonly model_name?: string
  readonly provider_name?: string
}

export class ScriptedModel implements ModelClient {
  readonly requests: ModelRequest[] = []
  inFlight = 0
  peakInFlight = 0
  /** Requests whose promise has settled (ok, error or abort). */
  settled = 0
  readonly #calls = new Map<string, number>()

  constructor(readonly options: ScriptedModelOptions = {}) {}

  async request(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    this.requests.push(request)
    this.inFlight++
    if (this.inFlight > this.peakInFlight) this.peakInFlight = this.inFlight
    try {
      const key = `${request.context.run_id}`
      const call = this.#calls.get(key) ?? 0
      this.#calls.set(key, call + 1)
      const step = await this.#step(request, call)
      if (step.delay_ms && step.delay_ms > 0) await sleep(step.delay_ms, signal)
      if (signal.aborted) throw signal.reason
      if (step.error !== undefined)
        throw typeof step.error === "string" ? new ScriptedModelError(step.error) : step.error
      const parts: ResponsePart[] = []
      if (step.text !== undefined) parts.push({ type: "text", text: step.text })
      for (const [i, c] of (step.tool_calls ?? []).entries())
        parts.push({ type: "tool_call", id: c.id ?? `call_${call}_${i}`, name: c.name, args: c.args ?? {} })
      const model = this.options.model_name ?? request.model
      return {
        parts,
        ...(step.usage ? { usage: step.usage } : {}),
        model_name: step.model_name ?? model,
        ...((step.provider_name ?? this.options.provider_name)
          ? { provider_name: step.provider_name ?? this.options.provider_name }
          : {}),
        ...(step.finish_reason ? { finish_reason: step.finish_reason } : {}),
      }
    } finally {
      this.inFlight--
      this.settled++
    }
  }

  async #step(request: ModelRequest, call: number): Promise<ScriptStep> {
    const { task_id, depth } = request.context
    const byTask = this.options.byTask ?? {}
    // Sub-queries are scripted as `<task>@<depth>`; depth 0 is the task itself. Own keys only: a task named
    // "constructor" or "__proto__" must not find Object.prototype's members.
    const id = depth === 0 ? task_id : `${task_id}@${depth}`
    const script = (Object.hasOwn(byTask, id) ? byTask[id] : undefined) ?? this.options.fallback
    if (!script) return { text: `done:${request.context.task_id}` }
    if (typeof script === "function") return await script(request, call)
    const step = script[call]
    if (!step)
      throw new ScriptedModelError(
        `script for task '${request.context.task_id}' has ${script.length} steps; request #${call + 1} has none`,
      )
    return step
  }
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. Leaves no timer behind. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal?.addEventListener("abort", onAbort, { once: true })
  })
}
