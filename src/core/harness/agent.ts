// One agent run (a task, or an RLM sub-query inside one) and the run-wide machinery every such run shares: the
// budget ledger, the request permits, the measurements and, when configured, the durable action ledger.
import type { ActionLedger, LedgeredTool, ToolBody, TransitionContext } from "../ledger/index.ts"
import { safeString } from "../repr.ts"
import { clipText, type ToolBoundaryError } from "../tools/errors.ts"
import type { BudgetLedger } from "./budget.ts"
import { BudgetExceededError, HarnessError, RecursionLimitError, TaskCancelledError } from "./errors.ts"
import type { EventStream } from "./events.ts"
import { newRunId } from "./ids.ts"
import type {
  Message,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelSettings,
  ResponsePart,
  ToolCall,
} from "./model.ts"
import { Semaphore } from "./semaphore.ts"
import { startTimer } from "./timer.ts"
import {
  type HarnessTool,
  modelVisibleMessage,
  PASSES_REFUSALS,
  type SubQuery,
  type ToolContext,
  ToolReportedError,
  toolOutputText,
} from "./tools.ts"
import type { ModelRequestSample, RunUsage } from "./types.ts"
import { reportedUsage, type UsageAccumulator } from "./usage.ts"

/** A model reply the harness cannot use (no parts array, a tool call without a name...). Fails the task. */
export class InvalidModelResponseError extends HarnessError {
  override readonly name = "InvalidModelResponseError"
  override readonly code = "invalid_model_response"
}

/** What a task looks like to the host's factories. */
export interface TaskInfo {
  readonly task_id: string
  readonly prompt: string
  readonly depends_on: readonly string[]
}

/** Recursive sub-queries (`rlmQueryTool`). */
export interface RlmOptions {
  /** Deepest allowed sub-query; a deeper one is a tool error for the model, not a run failure. Default 3. */
  readonly max_depth?: number
  /** Requests a sub-query may make before it gives up. Default 5. */
  readonly max_turns?: number
}

/** Per-run wiring shared by every task and sub-query. */
export interface SharedRun {
  readonly runId: string
  readonly model: ModelClient
  readonly modelName: string
  readonly settings: ModelSettings | undefined
  readonly budget: BudgetLedger
  readonly requestPermits: Semaphore
  readonly maxParallelToolCalls: number
  /** How long a tool batch waits for the sub-queries it left running to settle once it has aborted them. */
  readonly drainMs: number
  readonly maxSamples: number
  readonly samples: ModelRequestSample[]
  samplesTotal: number
  readonly now: () => number
  readonly startedAt: number
  readonly ledger: ActionLedger | null
  /**
   * Finished rows charged to the budget before the first task (`precharge`), by key, with what each was charged: their
   * replay charges no more.
   */
  readonly precharged: Map<string, Partial<RunUsage>>
  readonly rlm: Required<RlmOptions>
  /**
   * An error that fails a task, or a budget refusal, was met (`failsTask`): the driver stops the run at once, not
   * when the task settles.
   */
  failing: (taskId: string, error: unknown) => void
  /** The deadline has passed, its timer late or not: stops the run (aborting every task) and returns true. */
  pastDeadline: () => boolean
}

/** One child run: a task at depth 0 or a sub-query below it. */
export interface AgentContext {
  readonly shared: SharedRun
  readonly runId: string
  readonly parentRunId: string
  readonly task: TaskInfo
  readonly depth: number
  readonly signal: AbortSignal
  readonly stream: EventStream
  readonly usage: UsageAccumulator
  /** Durable key prefix: `<driver run>/<task>` plus the sub-query path. */
  readonly key: string
  readonly instructions: string | undefined
  readonly tools: readonly HarnessTool[]
  readonly maxTurns: number | null
  /**
   * A sub-query's: `value` set once the tool that spawned it returned its very promise (`rlm_query`), see
   * `failsTask`; `refusals` when that tool passes its budget refusals on at least (`rlm_parallel`), see `stopsOn`.
   */
  readonly passedOn?: PassedOn
}

interface PassedOn {
  value: boolean
  refusals: boolean
}

/** Whether an error that ends this run fails its task: a sub-query's does when each tool up the chain passes it on. */
const failsTask = (ctx: AgentContext): boolean => ctx.depth === 0 || ctx.passedOn?.value === true

/** Whether a budget refusal met in this run stops the run: each tool up the chain passes it on. */
const stopsOn = (ctx: AgentContext): boolean => failsTask(ctx) || ctx.passedOn?.refusals === true

/**
 * A budget refusal stops the run where it is met, as a failure does. Left to the task's settling a few microtasks
 * later, a sibling whose answer landed in the same tick ran its tool batch, or started a dependent task, after the
 * stop.
 */
function refused(ctx: AgentContext, e: BudgetExceededError): never {
  if (stopsOn(ctx) && !ctx.signal.aborted) ctx.shared.failing(ctx.task.task_id, e)
  throw e
}

/** Runs the model/tool loop until the model answers in text. Returns that text. */
export async function runAgent(ctx: AgentContext, prompt: string): Promise<string> {
  const messages: Message[] = [{ role: "user", content: prompt }]
  const defs = ctx.tools.map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    parameters: t.parameters,
  }))
  for (let step = 0; ; step++) {
    if (ctx.maxTurns !== null && step >= ctx.maxTurns)
      throw new RecursionLimitError(
        `sub-query made ${ctx.maxTurns} requests without a final answer (max_turns)`,
      )
    const response = await modelRequest(ctx, {
      model: ctx.shared.modelName,
      ...(ctx.instructions !== undefined ? { instructions: ctx.instructions } : {}),
      messages: messages.slice(),
      tools: defs,
      ...(ctx.shared.settings ? { settings: ctx.shared.settings } : {}),
      context: {
        run_id: ctx.runId,
        parent_run_id: ctx.parentRunId,
        task_id: ctx.task.task_id,
        depth: ctx.depth,
        step,
      },
    })
    const calls: ToolCall[] = []
    let text = ""
    for (const p of response.parts) {
      if (p.type === "text") text += p.text
      else calls.push({ id: p.id, name: p.name, args: p.args })
    }
    if (calls.length === 0) return text
    messages.push({ role: "assistant", content: text, tool_calls: calls })
    messages.push(...(await executeBatch(ctx, calls, step)))
  }
}

/**
 * The reply checked and copied: each field is read once, here, so a getter that throws (a `usage` whose counts throw)
 * fails the request inside sendRequest's try, before its permit is released, and what is checked is what is used.
 */
function checkResponse(r: unknown): ModelResponse {
  const o = r as Record<string, unknown> | null
  const raw = o?.parts
  if (!Array.isArray(raw)) throw new InvalidModelResponseError("the model client returned no `parts` array")
  // Tool results are matched to their calls by id: two calls with one id cannot be answered apart. (An id already
  // in the set leaves its size as it was.)
  const ids = new Set<string>()
  const parts: ResponsePart[] = []
  for (const p of raw) {
    const { type, text, id, name, args } = p ?? {}
    if (type === "text" && typeof text === "string") parts.push({ type, text })
    else if (
      type === "tool_call" &&
      typeof name === "string" &&
      typeof id === "string" &&
      ids.size < ids.add(id).size &&
      typeof args === "object" &&
      args !== null &&
      !Array.isArray(args)
    )
      parts.push({ type, id, name, args })
    // Its type and size only: the part may hold the model's text, which no failure message may carry.
    else
      throw new InvalidModelResponseError(
        `the model client returned an invalid part of type ${typeof type === "string" ? `'${type.slice(0, 40).replace(/[^\w.:-]/g, "?")}'` : typeof type}${typeof text === "string" ? ` (${text.length} text chars)` : ""}; a part must be { type: "text", text } or { type: "tool_call", id, name, args }, ids unique`,
      )
  }
  return {
    parts,
    usage: reportedUsage(o?.usage) ?? undefined,
    model_name: str(o?.model_name),
    provider_name: str(o?.provider_name),
    finish_reason: str(o?.finish_reason),
  }
}

/** A request through the durable ledger when one is configured: a finished request replays, never re-sent. */
async function modelRequest(ctx: AgentContext, req: ModelRequest): Promise<ModelResponse> {
  if (ctx.signal.aborted) throw ctx.signal.reason
  const s = ctx.shared
  let response: ModelResponse
  if (!s.ledger) response = await sendRequest(ctx, req)
  else {
    let sent = false
    const tool = ledgeredFor(s, MODEL_REQUEST, READ_BINDING, async () => {
      sent = true
      return await sendRequest(ctx, req)
    })
    const requestId = `${ctx.key}/r${req.context.step}`
    response = checkResponse(await tool({ step: req.context.step }, { requestId, signal: ctx.signal }))
    if (!sent) {
      // Paid for before a crash: it counts toward this run's budget (charged before the first task when the run
      // listed it) and usage, but it is not a new request sample.
      const usage = response.usage
      if (!s.precharged.delete(requestId)) s.budget.chargeReplay(usage)
      ctx.usage.add({ ...usage, requests: 1 })
    }
  }
  // Outside the ledgered body: a response that arrived is stored as completed even when it trips a limit or comes
  // after a cancel, so a rerun replays it instead of paying for it again (and, charged before its first task, stops
  // on the same limit).
  if (ctx.signal.aborted) throw ctx.signal.reason
  const trip = s.budget.afterResponse()
  if (trip) refused(ctx, new BudgetExceededError(trip.reason, trip.message))
  return response
}

/** The single choke point around `ModelClient.request`: permit, reservation, sample, settlement, token checks. */
async function sendRequest(ctx: AgentContext, req: ModelRequest): Promise<ModelResponse> {
  const s = ctx.shared
  const release = await s.requestPermits.acquire(ctx.signal)
  try {
    // A permit granted just before a stop (a sibling's fail-fast, an abort from the event sink, a deadline whose
    // timer has not fired yet) must not send.
    s.pastDeadline()
    if (ctx.signal.aborted) throw ctx.signal.reason
    try {
      s.budget.reserveRequest()
    } catch (e) {
      refused(ctx, e as BudgetExceededError)
    }
    // Counted when sent, as model_requests_total is: a request the drain gives up on never settles.
    ctx.usage.inc("requests")
    const index = s.samplesTotal++
    const t0 = s.now()
    let response: ModelResponse | undefined
    let error: unknown
    let failed = false
    try {
      response = checkResponse(await s.model.request(req, ctx.signal))
    } catch (e) {
      failed = true
      error = e
    }
    const elapsed = Math.max(0, s.now() - t0)
    const usage = response?.usage
    s.budget.settleRequest(usage)
    ctx.usage.add(usage)
    const outcome = ctx.signal.aborted ? "cancelled" : failed ? "error" : "ok"
    const finish = response?.finish_reason
    const sample: ModelRequestSample = Object.freeze({
      index,
      task_id: ctx.task.task_id,
      run_id: ctx.runId,
      depth: ctx.depth,
      started_ms: t0 - s.startedAt,
      client_request_elapsed_ms: elapsed,
      outcome,
      ...(failed ? { error_type: errorType(error) } : {}),
      // Strings only (checkResponse), like the usage: a client's object here (a cycle) hung the run when its result
      // was frozen.
      model_name: response?.model_name ?? req.model,
      provider_name: response?.provider_name ?? providerOf(req.model),
      input_tokens: usage?.input_tokens ?? null,
      output_tokens: usage?.output_tokens ?? null,
      ...(usage?.cache_read_tokens !== undefined ? { cache_read_tokens: usage.cache_read_tokens } : {}),
      ...(finish !== undefined ? { finish_reason: finish } : {}),
    })
    if (index < s.maxSamples) s.samples[index] = sample
    ctx.stream.emitTask(ctx.task, ctx.parentRunId, { type: "model_request_finished", sample })
    if (failed) {
      // A failed request that fails the task (a sub-query's, unless its parent's model is shown the error) stops the
      // run before this permit goes to a waiting sibling.
      if (failsTask(ctx) && (ctx.depth === 0 || modelVisibleMessage(error) === null) && !ctx.signal.aborted)
        s.failing(ctx.task.task_id, error)
      throw error
    }
    return response as ModelResponse
  } finally {
    release()
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

function providerOf(model: string): string | null {
  const i = model.indexOf(":")
  return i > 0 ? model.slice(0, i) : null
}

// Never throwing, always a string: an Error whose `message` getter threw, or whose `name` was an object (a cycle
// sent the result's deep freeze into endless recursion), left the run unsettled with an uncaught exception.
export function errorType(e: unknown): string {
  try {
    return e instanceof Error ? safeString(e.name) : typeof e
  } catch {
    return "Error"
  }
}

export function errorMessage(e: unknown): string {
  try {
    return safeString(e instanceof Error ? e.message : e)
  } catch {
    return "[unprintable error]"
  }
}

/** The tool name of a model request's durable row. */
export const MODEL_REQUEST = "harness.model_request"

const READ_BINDING = { agentId: "mycelium-harness", policyVersion: "1", sideEffectClass: "read" } as const

function ledgeredFor(
  shared: SharedRun,
  name: string,
  binding: HarnessTool["binding"] | undefined,
  body: ToolBody<Record<string, unknown>, unknown>,
): LedgeredTool<Record<string, unknown>, unknown> {
  // The body differs per call, so the wrapper is per call too; wrapping is cheap (no I/O).
  return (shared.ledger as ActionLedger).tool({ name, ...(binding ? { binding } : {}) }, body)
}

/**
 * Executes one response's tool batch: the whole batch is reserved first (a batch that would exceed
 * `tool_calls_limit` runs none of its calls), then at most `max_parallel_tool_calls` run at once, in call order.
 */
async function executeBatch(ctx: AgentContext, calls: readonly ToolCall[], step: number): Promise<Message[]> {
  const s = ctx.shared
  s.pastDeadline() // no tool starts after the deadline either
  if (ctx.signal.aborted) throw ctx.signal.reason
  const byName = new Map(ctx.tools.map((t) => [t.name, t]))
  // A call to an unknown tool is answered with an error and never counts, so it reserves nothing. Nor does a finished
  // call the run charged before its first task (precharge): its replay counts in `usage` only.
  const keyOf = (i: number) => `${ctx.key}/r${step}/c${i}`
  const known = calls.filter((c, i) => byName.has(c.name) && !s.precharged.has(keyOf(i))).length
  try {
    s.budget.reserveToolCalls(known)
  } catch (e) {
    refused(ctx, e as BudgetExceededError)
  }
  let started = 0
  const gate = new Semaphore(s.maxParallelToolCalls)
  // The batch's own signal: the task's abort reaches every call, and so does a sibling's fatal error, so a failing
  // batch does not wait for its slow calls before the task fails.
  const batch = new AbortController()
  const onTaskAbort = () => batch.abort(ctx.signal.reason)
  ctx.signal.addEventListener("abort", onTaskAbort, { once: true })
  let fatal: { error: unknown } | null = null
  const spawned: Promise<unknown>[] = []
  const settled = await Promise.allSettled(
    calls.map(async (call, i): Promise<Message> => {
      const tool = byName.get(call.name)
      if (!tool)
        return {
          role: "tool",
          tool_call_id: call.id,
          name: call.name,
          // The name is the model's: shown as a boundary error shows it, clipped and escaped ("x\n\nSYSTEM: ..."
          // stood on lines of its own in the tool message, and a 1 MB name came back whole in the next prompt).
          content: `Unknown tool '${clipText(safeString(call.name))}'. Available tools: ${[...byName.keys()].join(", ") || "none"}.`,
          is_error: true,
        }
      const release = await gate.acquire(batch.signal)
      // Taken back when the call's own boundary refuses it before its body runs (`notRun`). Its reservation was spent
      // when it started, synchronously as every check is, so no limit overshoots (a batch refused meanwhile was
      // refused early); a replayed call the pre-charge charged nothing for takes back its `usage` count only.
      let charged = false
      const uncount = () => {
        if (charged) s.budget.committed.inc("tool_calls", -1)
        ctx.usage.inc("tool_calls", -1)
      }
      try {
        // Per call, not only per batch: a busy call holds the loop past the deadline, and the next starts in a
        // microtask, before the late timer can abort the batch.
        s.pastDeadline()
        if (batch.signal.aborted) throw batch.signal.reason
        if (!s.precharged.delete(keyOf(i))) {
          started++
          s.budget.commitToolCall()
          charged = true
        }
        ctx.usage.inc("tool_calls")
        const value = await invokeTool(ctx, tool, call, keyOf(i), batch.signal, spawned, uncount)
        return { role: "tool", tool_call_id: call.id, name: call.name, content: toolOutputText(value) }
      } catch (e) {
        const visible = batch.signal.aborted ? null : modelVisibleMessage(e)
        if (visible === null) {
          if (!fatal) {
            fatal = { error: e }
            if (failsTask(ctx) && !ctx.signal.aborted) s.failing(ctx.task.task_id, e)
            batch.abort(e)
          }
          throw e
        }
        if (notRun(e, tool)) uncount()
        return { role: "tool", tool_call_id: call.id, name: call.name, content: visible, is_error: true }
      } finally {
        release()
      }
    }),
  )
  ctx.signal.removeEventListener("abort", onTaskAbort)
  // The batch is over: work a tool left running (a sub-query it spawned without awaiting, a fetch) is cancelled,
  // or it would keep paying for model requests after the task, or the whole run, has finished.
  if (!batch.signal.aborted) batch.abort(new TaskCancelledError("the tool batch finished"))
  // ...and waited for (within the drain timeout), so its request events and usage land before the task's end.
  if (spawned.length > 0)
    await new Promise<void>((done) => {
      const timer = startTimer(s.drainMs, () => done())
      void Promise.allSettled(spawned).then(() => {
        timer.clear()
        done()
      })
    })
  s.budget.releaseToolCalls(known - started)
  if (fatal) throw (fatal as { error: unknown }).error
  const messages: Message[] = []
  for (const r of settled) {
    if (r.status === "rejected") throw r.reason
    messages.push(r.value)
  }
  return messages
}

async function invokeTool(
  ctx: AgentContext,
  tool: HarnessTool,
  call: ToolCall,
  key: string,
  signal: AbortSignal,
  spawned: Promise<unknown>[],
  uncount: () => void,
): Promise<unknown> {
  let n = 0
  const links = new Map<unknown, PassedOn>()
  // rlm_parallel rethrows a sub-query's refusal (a few microtasks later, after a sibling could act on it).
  const refusals = PASSES_REFUSALS.has(tool.execute) && stopsOn(ctx)
  // The ledgered call's transition, once its body runs (durable runs only).
  let tx: TransitionContext | undefined
  const toolCtx: ToolContext = {
    sideEffect: async (fn) => {
      // Not after the call was cancelled (its batch ended, the run stopped): the effect would start unasked.
      if (signal.aborted) throw signal.reason
      return await (tx ? tx.sideEffect(fn) : fn())
    },
    signal,
    run_id: ctx.runId,
    parent_run_id: ctx.parentRunId,
    task_id: ctx.task.task_id,
    depth: ctx.depth,
    call_id: call.id,
    max_concurrent_requests: ctx.shared.requestPermits.permits,
    spawn: (sub) => {
      const link = { value: false, refusals }
      const p = spawnSubQuery({ ...ctx, signal }, sub, `${key}/q${n++}`, link)
      links.set(p, link)
      // A sub-query left unawaited may fail while its tool awaits other work: not an unhandled rejection (the batch
      // waits for it, and an await of it still throws).
      p.catch(() => {})
      spawned.push(p)
      return p
    },
  }
  // A tool that returns a sub-query's own promise (rlm_query) fails with that sub-query's error: the sub-query can
  // then stop the run where it fails, before its request permit is released.
  const execute = (a: Record<string, unknown>): unknown => {
    const r = tool.execute(a, toolCtx)
    const link = links.get(r)
    if (link) {
      link.value = failsTask(ctx)
      link.refusals = stopsOn(ctx)
    }
    return r
  }
  const args = call.args as Record<string, unknown>
  // `await`, not a bare return: a tool may hand back an already-rejected promise, and returning it from an async
  // function leaves it unobserved for a tick, which workerd reports as an unhandled rejection.
  if (!ctx.shared.ledger) return await execute(args)
  // An error the model reads as the tool's answer is the call's completed result, not a ledger failure: a rerun
  // shows the model the same message instead of hard-blocking a side-effecting tool that reported it.
  const ledgered = ledgeredFor(ctx.shared, tool.name, tool.binding, async (a, t) => {
    tx = t
    try {
      return escaped(await execute(a))
    } catch (e) {
      const visible = signal.aborted ? null : modelVisibleMessage(e)
      if (visible === null) throw e
      return { [REPORTED]: visible, ...(notRun(e, tool) && { [NOT_RUN]: 1 }) }
    }
  })
  const out = await ledgered(args, { requestId: key, signal })
  // Live or replayed, a refusal before the body ran is taken back (the pre-charge skips its row).
  if (ownField(out, NOT_RUN)) uncount()
  const reported = ownField(out, REPORTED)
  if (typeof reported === "string") throw new ToolReportedError(reported)
  const inner = ownField(out, RESULT)
  return inner === undefined ? out : inner
}

/**
 * A tool's own boundary refused the call before its body ran (a `bounded()` tool's input, scope or allowlist check,
 * its error naming the tool): the call does not count (harness-behavior §2.6). An output refusal came after the body.
 */
const notRun = (e: unknown, tool: HarnessTool): boolean => {
  const b = e as ToolBoundaryError
  return b.code === "tool_boundary" && b.stage !== "output" && b.toolName === tool.name
}

/** The key of a stored tool result that is the error the model was shown. Only the harness writes it. */
const REPORTED = "$harness_reported_error"
/** Set beside REPORTED on a call `notRun`: it is not counted, live, replayed or pre-charged. */
export const NOT_RUN = "$harness_not_run"
const RESULT = "$harness_result"

/** A tool's result as stored: one holding a `$harness_` key is wrapped, so no tool result reads as a marker. */
function escaped(v: unknown): unknown {
  // Judged on the JSON form the store writes (an SDK response's toJSON() body, as the store's walk repeats it), so a
  // replay shows what this run showed, and on the value's own fields, which this run reads its markers from.
  // Bounded: a toJSON() returning itself fails in the store, not here.
  let j = v as { toJSON?: () => unknown } | null | undefined
  for (let i = 0; i < 9 && typeof j?.toJSON === "function"; i++) j = j.toJSON() as typeof j
  return marked(v) || marked(j) ? { [RESULT]: v } : v
}

function marked(o: unknown): boolean {
  // Objects only: a long string's for-in would walk every index. (A big array's costs what storing it costs.)
  if (Object(o) === o) for (const k in o as object) if (k.startsWith("$harness_")) return true
  return false
}

/** `o[k]` when k is o's own enumerable key (as in a stored row), else undefined. */
export const ownField = (o: unknown, k: string): unknown =>
  Object.prototype.propertyIsEnumerable.call(o ?? 0, k) ? (o as Record<string, unknown>)[k] : undefined

/** An RLM sub-query: a fresh child agent at depth + 1 on the same budget, permits and measurements. */
export function spawnSubQuery(
  parent: AgentContext,
  sub: SubQuery,
  key: string,
  passedOn: PassedOn,
): Promise<string> {
  const max = parent.shared.rlm.max_depth
  if (parent.depth + 1 > max)
    return Promise.reject(new RecursionLimitError(`recursion depth exceeded (max ${max})`))
  if (typeof sub?.prompt !== "string" || sub.prompt.trim() === "")
    return Promise.reject(new RecursionLimitError("a sub-query needs a non-empty prompt"))
  const child: AgentContext = {
    ...parent,
    runId: newRunId(),
    depth: parent.depth + 1,
    key,
    maxTurns: parent.shared.rlm.max_turns,
    passedOn,
  }
  const prompt = sub.context ? `${sub.prompt}\n\nContext:\n${sub.context}` : sub.prompt
  return runAgent(child, prompt)
}
