// The world of the harness's chaos property test (property-chaos.test.ts): a model and tools whose every choice
// (delay, failure, tool batch, sub-query) is a hash of the case seed and a stable key, so a durable resume makes the
// same choices; and a probe that checks the fail-fast and budget rules at every request, tool start and event. Some
// cases add side-effecting tools (`fx`) whose effects a provider log shared by every life records.
import { vi } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  type RunEvent,
  rlmParallelTool,
  rlmQueryTool,
  TaskCancelledError,
  type ToolContext,
  ToolReportedError,
} from "../../../src/core/harness/index.ts"
import { PASSES_REFUSALS } from "../../../src/core/harness/tools.ts"

export interface ChaosCase {
  readonly seed: number
  readonly n: number
  readonly edges: ReadonlyArray<readonly [number, number]>
  readonly mc: number
  readonly mcr: number
  readonly requestLimit: number | undefined
  readonly toolLimit: number | undefined
  readonly initialRequests: number
  /** Per request: a fatal error, then an error carrying an llmMessage (a tool error where a sub-query meets it). */
  readonly pFatal: number
  readonly pVisible: number
  /** Per tool call: a throw that fails the task, and one the model reads. */
  readonly pToolFatal: number
  readonly pToolVisible: number
  readonly abortAt: { readonly kind: "time" | "event"; readonly at: number } | undefined
  readonly deadlineMs: number | undefined
  /** The host's per-task timeout, enforced in its model client: a request past it rejects with a TimeoutError. */
  readonly taskTimeoutMs: number | undefined
  readonly maxDepth: number
  readonly maxTurns: number
  /** Short: a tool or request deaf to its abort outlives the drain. */
  readonly drainMs: number
  readonly durable: { readonly crashAtEvent: number } | undefined
  /**
   * Side-effecting tools: a call's chance of being one; for a durable case, the effect attempt (counted from 1 in the
   * crashed life) and the moment the crash cuts it (before the provider call, with the provider's answer in flight,
   * or once the tool returned, before its row is written); `early`, a resume while the dead run's leases are live
   * (the ledger clock moved `advance` s of their 30) with the ledger's `pollTimeout` (null: the default, 300 s).
   */
  readonly fx:
    | {
        readonly p: number
        readonly crashAt: { readonly nth: number; readonly phase: FxPhase } | undefined
        readonly early: { readonly advance: number; readonly pollTimeout: number | null } | undefined
      }
    | undefined
}

export type FxPhase = "before" | "during" | "after"

/** The side-effecting tools and their classes: a keyed one sends its `idem` argument as the provider's key. */
export const FX_CLASS = {
  pay: "non_idempotent_mutate",
  charge: "keyed_mutate",
  launch: "irreversible",
} as const
export type FxName = keyof typeof FX_CLASS
const FX_NAMES = Object.keys(FX_CLASS) as FxName[]

/**
 * The provider behind the side-effecting tools, shared by every life of a case (it outlives the crash). An effect's
 * identity is its call's prompt, one per durable key (`sub:<task or sub-query>/<step>/<call>`). It applies every
 * call, except a keyed one whose key it has seen, which it answers as before.
 */
export class Provider {
  /** Effects applied, by call identity: more than one is the defect these tools look for. */
  readonly applied = new Map<string, number>()
  readonly results = new Map<string, string>()
  readonly #keys = new Set<string>()
  calls = 0
  deduped = 0

  call(name: FxName, id: string, idem: string): string {
    this.calls++
    const result = `${name} ${id}`
    if (FX_CLASS[name] === "keyed_mutate") {
      if (this.#keys.has(idem)) {
        this.deduped++
        return result
      }
      this.#keys.add(idem)
    }
    this.applied.set(id, (this.applied.get(id) ?? 0) + 1)
    this.results.set(id, result)
    return result
  }
}

/** A uniform [0, 1) from the seed and the parts: the same on a resume as in the crashed run. */
export function h(seed: number, ...parts: ReadonlyArray<string | number>): number {
  let x = (seed ^ 0x9e3779b9) >>> 0
  for (const ch of parts.join("|")) {
    x = Math.imul(x ^ ch.charCodeAt(0), 0x85ebca6b)
    x ^= x >>> 13
  }
  x = Math.imul(x ^ (x >>> 16), 0xc2b2ae35)
  x ^= x >>> 16
  return (x >>> 0) / 2 ** 32
}

const STOP_PREFIX = "task cancelled:"

/** What one run did, and every rule it broke, as it happened. */
export class Probe {
  readonly violations: string[] = []
  /** Why the run counts as stopped, once it does. */
  stopped: string | null = null
  finished = false
  sends = 0
  inFlight = 0
  peakInFlight = 0
  toolStarts = 0
  toolEnds = 0
  readonly toolOpen = new Set<string>()
  /** `<task>@<depth>#<step>` of every request sent, and `<task>#<call_id>` of every depth-0 tool run. */
  readonly sent: string[] = []
  readonly toolsRun: string[] = []
  /** A task's final text, by task id (depth 0). */
  readonly texts = new Map<string, string>()
  /** What the case exercised, for the soak report. */
  readonly notes: Record<string, number> = {}
  readonly #watched = new WeakSet<AbortSignal>()
  t0 = 0

  constructor(
    readonly c: ChaosCase,
    /** Requests already charged before this run (initial usage, and what a resume replays, once known). */
    readonly charged: number,
  ) {}

  note(what: string): void {
    this.notes[what] = (this.notes[what] ?? 0) + 1
  }

  violate(what: string): void {
    this.violations.push(what)
  }

  stop(why: string): void {
    this.stopped ??= why
  }

  /**
   * A stop reaches every running task's signal synchronously: the first such abort is the stop's moment. A task's own
   * signal (what its depth-0 requests get) aborts only on a stop, the failing task's included; a batch's also when
   * one of its calls fails, which stops the run only by the task's signal.
   */
  watch(signal: AbortSignal, task = false): void {
    if (this.#watched.has(signal)) return
    this.#watched.add(signal)
    const seen = () => {
      const r: unknown = signal.reason
      if (task) this.stop(`task signal aborted (${r instanceof Error ? r.message : String(r)})`)
      else if (r instanceof TaskCancelledError && r.message.startsWith(STOP_PREFIX))
        this.stop(`abort (${r.message})`)
    }
    if (signal.aborted) seen()
    else signal.addEventListener("abort", seen, { once: true })
  }

  /** Nothing starts after a stop or past the deadline, and no limit is overshot. */
  starting(what: string, signal: AbortSignal, task = false): void {
    this.watch(signal, task)
    if (this.finished) this.violate(`${what} started after run_finished`)
    else if (this.stopped) this.violate(`${what} started after the run stopped (${this.stopped})`)
    const d = this.c.deadlineMs
    if (d !== undefined && Date.now() - this.t0 >= d) this.violate(`${what} started past the deadline`)
    this.limits(what)
  }

  limits(where: string): void {
    const { requestLimit, toolLimit } = this.c
    if (requestLimit !== undefined && this.charged + this.sends > Math.max(requestLimit, this.charged))
      this.violate(`${where}: ${this.charged + this.sends} requests over request_limit ${requestLimit}`)
    if (toolLimit !== undefined && this.toolStarts > toolLimit)
      this.violate(`${where}: ${this.toolStarts} tool calls over tool_calls_limit ${toolLimit}`)
    if (this.inFlight > this.c.mcr)
      this.violate(`${where}: ${this.inFlight} requests in flight > ${this.c.mcr}`)
  }

  event(e: RunEvent): void {
    if (this.finished) this.violate(`${e.type} after run_finished`)
    this.limits(e.type)
    if (e.type === "task_failed" || e.type === "task_cancelled") this.stop(`${e.type} ${e.task_id}`)
    if (e.type === "run_finished") this.finished = true
  }
}

/** The world's own timers still pending: a deaf sub-query's may outlive its task (the batch waits only the drain). */
export const worldTimers = { live: 0 }

/** Waits `ms` (fake time), or until `signal` aborts unless deaf, or until `timeoutAt` (a TimeoutError). */
function wait(ms: number, signal: AbortSignal | null, timeoutAt: number | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const timers: ReturnType<typeof setTimeout>[] = []
    worldTimers.live++
    const done = (f: () => void) => {
      worldTimers.live--
      for (const t of timers) clearTimeout(t)
      signal?.removeEventListener("abort", onAbort)
      f()
    }
    const onAbort = () => done(() => reject(signal?.reason))
    if (signal?.aborted) return done(() => reject(signal.reason))
    signal?.addEventListener("abort", onAbort, { once: true })
    if (timeoutAt !== null && timeoutAt - Date.now() <= ms)
      timers.push(
        setTimeout(
          () => done(() => reject(new DOMException("the task's time is up", "TimeoutError"))),
          Math.max(0, timeoutAt - Date.now()),
        ),
      )
    timers.push(setTimeout(() => done(resolve), ms))
  })
}

const never = () => new Promise<never>(() => {})

/**
 * A model and its tools for one run (`life` 1 is the first, 2 a resume). After `dead()` turns true (a crash), every
 * call hangs: a killed process sends nothing more.
 */
export function chaosWorld(
  c: ChaosCase,
  probe: Probe,
  life: number,
  dead: () => boolean,
  fx?: { readonly provider: Provider; readonly die: () => void },
) {
  const firstRequest = new Map<string, number>()
  // Depth 0 is keyed by task; a sub-query by its prompt, which names its parent's key, step and call.
  const keyOf = (req: ModelRequest) =>
    req.context.depth === 0 ? req.context.task_id : String(req.messages[0]?.content ?? "")

  const model: ModelClient = {
    async request(req: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
      if (dead()) return never()
      const { task_id, depth, step } = req.context
      const key = keyOf(req)
      probe.starting(`request ${task_id}@${depth}#${step}`, signal, depth === 0)
      probe.sends++
      probe.sent.push(`${task_id}@${depth}#${step}`)
      if (depth > 0) probe.note("sub-query requests")
      probe.inFlight++
      probe.peakInFlight = Math.max(probe.peakInFlight, probe.inFlight)
      probe.limits("request")
      try {
        const r = (tag: string) => h(c.seed, key, step, tag)
        let timeoutAt: number | null = null
        if (c.taskTimeoutMs !== undefined && depth === 0) {
          if (!firstRequest.has(req.context.run_id)) firstRequest.set(req.context.run_id, Date.now())
          timeoutAt = (firstRequest.get(req.context.run_id) as number) + c.taskTimeoutMs
        }
        const deaf = r("deaf") < 0.06
        if (timeoutAt !== null && timeoutAt - Date.now() <= Math.floor(r("delay") * 6))
          probe.note("task timeouts")
        await wait(Math.floor(r("delay") * 6), deaf ? null : signal, timeoutAt)
        if (dead()) return never()
        const e = r("err")
        if (e < c.pFatal) throw new Error(`model error in ${key}#${step}`)
        if (e < c.pFatal + c.pVisible) throw new ToolReportedError(`model says no in ${key}#${step}`)
        const usage = {
          input_tokens: 1 + Math.floor(r("in") * 9),
          output_tokens: 1 + Math.floor(r("out") * 4),
        }
        const turns = Math.floor(h(c.seed, key, "turns") * (depth === 0 ? 4 : 3))
        if (step >= turns) {
          const text = `answer ${key} #${life}`
          if (depth === 0) probe.texts.set(task_id, text)
          return { parts: [{ type: "text", text }], usage }
        }
        const k = 1 + Math.floor(r("calls") * 3)
        return {
          parts: Array.from({ length: k }, (_, i) => toolCall(key, step, i)),
          usage,
        }
      } finally {
        probe.inFlight--
      }
    },
  }

  const NAMES = [
    "work",
    "work",
    "work",
    "deaf",
    "rlm_query",
    "rlm_parallel",
    "catch_sub",
    "spawn_forget",
    "nope",
  ]
  function toolCall(key: string, step: number, i: number) {
    const r = (tag: string) => h(c.seed, key, step, i, tag)
    // Own hashes: a case without side-effecting tools picks and calls as it always did.
    const effect = c.fx && r("fx") < c.fx.p ? FX_NAMES[Math.floor(r("fx name") * FX_NAMES.length)] : undefined
    const name = effect ?? (NAMES[Math.floor(r("name") * NAMES.length)] as string)
    const m = r("mode")
    const mode = m < c.pToolFatal ? "fatal" : m < c.pToolFatal + c.pToolVisible ? "visible" : "ok"
    const prompt = `sub:${key}/${step}/${i}`
    return {
      type: "tool_call" as const,
      id: `c${step}_${i}`,
      name,
      args: {
        delay: Math.floor(r("delay") * 6),
        mode,
        prompt,
        queries: Array.from({ length: 1 + Math.floor(r("q") * 3) }, (_, j) => ({ prompt: `${prompt}/${j}` })),
        ...(effect ? { idem: `idem:${prompt}` } : {}),
      },
    }
  }

  /** Counts a tool's run from start to end, once each, and checks the rules at its start. */
  function tracked(name: string, ctx: ToolContext): () => void {
    if (dead()) return () => {}
    const id = `${ctx.run_id}/${ctx.call_id}`
    probe.starting(`tool ${name} of ${ctx.task_id}@${ctx.depth}`, ctx.signal)
    if (probe.toolOpen.has(id)) probe.violate(`tool call ${id} started twice`)
    probe.toolOpen.add(id)
    probe.toolStarts++
    probe.note(`tool ${name}`)
    if (ctx.depth === 0) probe.toolsRun.push(`${ctx.task_id}#${ctx.call_id}`)
    probe.limits("tool")
    let ended = false
    return () => {
      if (ended) probe.violate(`tool call ${id} ended twice`)
      ended = true
      probe.toolEnds++
      probe.toolOpen.delete(id)
    }
  }

  async function body(args: Record<string, unknown>, ctx: ToolContext, deaf: boolean): Promise<string> {
    await wait(args.delay as number, deaf ? null : ctx.signal, null)
    if (dead()) return never()
    if (args.mode === "fatal") throw new Error(`tool failed for ${ctx.task_id}`)
    if (args.mode === "visible") throw new ToolReportedError("try again later")
    return `done ${String(args.prompt)}`
  }

  const simple = (name: string, deaf: boolean): HarnessTool => ({
    name,
    parameters: { type: "object" },
    binding: { agentId: "chaos", policyVersion: "1", sideEffectClass: "read" },
    async execute(args, ctx) {
      if (dead()) return never()
      const end = tracked(name, ctx)
      try {
        return await body(args, ctx, deaf)
      } finally {
        end()
      }
    },
  })

  // The RLM tools keep their own execute semantics: rlm_query returns the sub-query's very promise, and
  // rlm_parallel's wrapper stays one that passes refusals on.
  const query = rlmQueryTool()
  const parallel = rlmParallelTool()
  const passingOn = (tool: HarnessTool): HarnessTool => {
    const wrapped: HarnessTool = {
      ...tool,
      execute(args, ctx) {
        if (dead()) return never()
        const end = tracked(tool.name, ctx)
        const p = Promise.resolve(tool.execute(args, ctx) as Promise<unknown>)
        p.then(end, end)
        return p
      },
    }
    PASSES_REFUSALS.add(wrapped.execute)
    return wrapped
  }
  const rlmQuery: HarnessTool = {
    ...query,
    execute(args, ctx) {
      if (dead()) return never()
      const end = tracked("rlm_query", ctx)
      // The very promise spawn returned: a sub-query's failure then fails the task where it happens.
      const p = query.execute(args, ctx) as Promise<unknown>
      p.then(end, end)
      return p
    },
  }

  let attempts = 0
  /** The crash cuts this attempt at `phase`: the process is gone from here on. */
  const crashesAt = (n: number, phase: FxPhase) => {
    const at = life === 1 && c.durable ? c.fx?.crashAt : undefined
    if (!fx || at?.nth !== n || at.phase !== phase) return false
    probe.note(`crash ${phase} effect`)
    fx.die()
    return true
  }
  // A tool that pays the provider: waits (abortable), calls it, waits for its answer (abortable for some calls: an
  // effect whose answer is lost), and fails before or after the effect as its mode says. The harness gives a tool no
  // `tx`, so the row knows no boundary: the class's gates must cover every crash.
  const effectTool = (name: FxName): HarnessTool => ({
    name,
    parameters: { type: "object" },
    binding: {
      agentId: "chaos",
      policyVersion: "1",
      sideEffectClass: FX_CLASS[name],
      ...(FX_CLASS[name] === "keyed_mutate" ? { providerIdempotencyKeyParam: "idem" } : {}),
    },
    async execute(args, ctx) {
      if (dead()) return never()
      const end = tracked(name, ctx)
      const n = ++attempts
      try {
        const id = String(args.prompt)
        const late = h(c.seed, id, "late") < 0.5
        await wait(args.delay as number, ctx.signal, null)
        if (dead() || crashesAt(n, "before")) return never()
        if (!late) await body({ ...args, delay: 0 }, ctx, false)
        const out = (fx as { provider: Provider }).provider.call(name, id, String(args.idem))
        probe.note(`effect ${name}`)
        if (crashesAt(n, "during")) return never()
        const hear = h(c.seed, id, "hear") < 0.5
        await wait(Math.floor(h(c.seed, id, "answer") * 4), hear ? ctx.signal : null, null)
        if (dead()) return never()
        if (late) await body({ ...args, delay: 0 }, ctx, false)
        crashesAt(n, "after")
        return out
      } finally {
        end()
      }
    },
  })

  const tools: HarnessTool[] = [
    simple("work", false),
    simple("deaf", true),
    rlmQuery,
    passingOn(parallel),
    {
      name: "catch_sub",
      parameters: { type: "object" },
      // Handles whatever its sub-query meets, budget refusals included: those do not stop the run.
      async execute(args, ctx) {
        if (dead()) return never()
        const end = tracked("catch_sub", ctx)
        try {
          return await ctx.spawn({ prompt: String(args.prompt) })
        } catch (e) {
          probe.note(`catch_sub caught ${e instanceof Error ? e.name : typeof e}`)
          return `caught ${e instanceof Error ? e.name : typeof e}`
        } finally {
          end()
        }
      },
    },
    {
      name: "spawn_forget",
      parameters: { type: "object" },
      // Leaves its sub-query running: the batch's end aborts it and waits for it.
      execute(args, ctx) {
        if (dead()) return never()
        const end = tracked("spawn_forget", ctx)
        void ctx.spawn({ prompt: String(args.prompt) }).catch(() => {})
        end()
        return "spawned"
      },
    },
    ...(fx ? FX_NAMES.map(effectTool) : []),
  ]
  return { model, tools }
}

/** Runs the fake clock until `p` settles or `halt()` says stop; a run with nothing left to wait for is a hang. */
export async function drive<T>(
  p: Promise<T>,
  halt: () => boolean = () => false,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown } | null> {
  let out: { ok: true; value: T } | { ok: false; error: unknown } | null = null
  p.then(
    (value) => {
      out = { ok: true, value }
    },
    (error: unknown) => {
      out = { ok: false, error }
    },
  )
  for (;;) {
    await new Promise((r) => setImmediate(r))
    // A crash wins over a settling it could not have seen (a run refused at start settles in its first event).
    if (halt()) return null
    if (out) return out
    if (vi.getTimerCount() === 0) throw new Error("the run never settled: nothing left to wait for")
    vi.advanceTimersToNextTimer()
  }
}

/** Fires the remaining fake timers (deaf work outliving a drain) until none is left. */
export async function drainClock(): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    await new Promise((r) => setImmediate(r))
    if (vi.getTimerCount() === 0) return
    vi.advanceTimersToNextTimer()
  }
  throw new Error("timers kept coming")
}
