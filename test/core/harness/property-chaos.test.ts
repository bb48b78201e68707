// Random plans whose requests and tools fail, time out and spawn RLM sub-queries (awaited, caught, left running),
// under random limits, a caller abort at a random moment, a run deadline and, for durable cases, a crash mid-plan
// followed by a resume of the same run id. At every request, tool start and event (chaos-world.ts's Probe): nothing
// starts after the run stopped or past the deadline, no limit is overshot (sub-queries included), no event follows
// run_finished. Once settled: every start has its one end, the harness leaves no timer, counts add up, and a resume
// neither re-runs what finished nor loses its result. Cases with side-effecting tools (chaos-world.ts's `fx`) may crash
// before, during or after an effect, resume while the dead run's leases are still live, and, where the resume
// hard-blocks, have an operator release each blocked row from the provider's log and resume once more. On every
// resume, per durable key: the provider applied the effect at most once; a call whose effect may have happened never
// runs its body and is refused (LedgerHardBlockError, or a typed poll timeout or abort), never answered without a
// completed row; a released row replays or runs once. Timers are fake, so each case repeats from its seed:
//   MYCELIUM_HARNESS_SEED=<seed> npx vitest run --project node test/core/harness/property-chaos.test.ts
// MYCELIUM_HARNESS_RUNS (cases, default 150), MYCELIUM_HARNESS_SECONDS (keep going at least that long) soak;
// MYCELIUM_HARNESS_REPORT=1 prints what the cases did.
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import {
  type RunEvent,
  RunFailed,
  type RunResult,
  type RunTask,
  runPlan,
} from "../../../src/core/harness/index.ts"
import {
  ActionLedger,
  type LedgerEntry,
  type LedgeredTool,
  type LedgeredToolOptions,
  MemoryLedgerStorage,
  resolvedOutcome,
  type ToolArgs,
  type ToolBody,
} from "../../../src/core/index.ts"
import type { LedgerStorage } from "../../../src/core/storage/contract.ts"
import { ManualClock } from "../../../src/testing.ts"
import { modelKnobs } from "../model-kit.ts"
import {
  type ChaosCase,
  chaosWorld,
  drainClock,
  drive,
  FX_CLASS,
  h,
  Probe,
  Provider,
  worldTimers,
} from "./chaos-world.ts"
import { checkInvariants, delayedStore } from "./helpers.ts"

const knobs = modelKnobs(process.env, 46_046, "MYCELIUM_HARNESS_")
const RUNS = knobs.runs ?? 150

const p = (max: number) => fc.double({ min: 0, max, noNaN: true })
const arbCase: fc.Arbitrary<ChaosCase> = fc.record({
  seed: fc.nat(),
  n: fc.integer({ min: 1, max: 7 }),
  edges: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 14 }),
  mc: fc.integer({ min: 1, max: 4 }),
  mcr: fc.integer({ min: 1, max: 3 }),
  requestLimit: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined, freq: 2 }),
  toolLimit: fc.option(fc.integer({ min: 0, max: 25 }), { nil: undefined, freq: 2 }),
  initialRequests: fc.integer({ min: 0, max: 2 }),
  pFatal: p(0.08),
  pVisible: p(0.15),
  pToolFatal: p(0.08),
  pToolVisible: p(0.2),
  abortAt: fc.option(
    fc.record({
      kind: fc.constantFrom("time" as const, "event" as const),
      at: fc.integer({ min: 0, max: 40 }),
    }),
    { nil: undefined },
  ),
  deadlineMs: fc.option(fc.integer({ min: 1, max: 120 }), { nil: undefined, freq: 2 }),
  taskTimeoutMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined, freq: 2 }),
  maxDepth: fc.integer({ min: 0, max: 2 }),
  maxTurns: fc.integer({ min: 1, max: 4 }),
  drainMs: fc.oneof(
    { weight: 9, arbitrary: fc.constant(60_000) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
  ),
  durable: fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.record({ crashAtEvent: fc.integer({ min: 1, max: 24 }) }) },
  ),
  // Last, so the fields above are drawn as before it: a case without it runs as it always did.
  fx: fc.option(
    fc.record({
      p: fc.double({ min: 0.1, max: 0.7, noNaN: true }),
      crashAt: fc.option(
        fc.record({
          nth: fc.integer({ min: 1, max: 4 }),
          phase: fc.constantFrom("before" as const, "during" as const, "after" as const),
        }),
        { nil: undefined, freq: 4 },
      ),
      early: fc.option(
        fc.record({
          advance: fc.integer({ min: 0, max: 29 }),
          pollTimeout: fc.option(fc.integer({ min: 1, max: 20 }), { nil: null }),
        }),
        { nil: undefined, freq: 2 },
      ),
    }),
    { nil: undefined, freq: 2 },
  ),
})

/** Edges point backwards, so the graph is a DAG; a final `out` joins every other sink. */
function planOf(c: ChaosCase): RunTask[] {
  const deps = Array.from({ length: c.n }, () => new Set<number>())
  for (const [a, b] of c.edges) if (b % c.n < a % c.n) deps[a % c.n]?.add(b % c.n)
  const tasks: RunTask[] = deps.map((d, i) => ({
    task_id: `t${i}`,
    prompt: `p${i}`,
    depends_on: [...d].map((j) => `t${j}`),
  }))
  const hasDependent = new Set(tasks.flatMap((t) => t.depends_on ?? []))
  tasks.push({
    task_id: "out",
    prompt: "join",
    depends_on: tasks.filter((t) => !hasDependent.has(t.task_id)).map((t) => t.task_id),
  })
  return tasks
}

const totals: Record<string, number> = {}
const tally = (k: string, by = 1) => {
  totals[k] = (totals[k] ?? 0) + by
}

const never = () => new Promise<never>(() => {})
/** The store as a killed process leaves it: after the crash, no call of the dead run reaches it. */
function crashable(store: LedgerStorage, dead: () => boolean): LedgerStorage {
  return new Proxy(store, {
    get(target, prop) {
      const v: unknown = Reflect.get(target, prop, target)
      if (typeof v !== "function") return v
      return (...args: unknown[]) =>
        dead() ? never() : (v as (...a: unknown[]) => unknown).apply(target, args)
    },
  })
}

/**
 * The resume's store answers each row after a delay of its own (0-7 ms, from the seed): a finished task's replay may be
 * read after other tasks sent requests, which the resume's budget must have counted already.
 */
function laggy(store: LedgerStorage, seed: number): LedgerStorage {
  return delayedStore(
    store,
    (id) => Math.floor(h(seed, "lag", id) * 8),
    async (ms) => {
      worldTimers.live++
      await new Promise((r) => setTimeout(r, ms))
      worldTimers.live--
    },
  )
}

interface Life {
  readonly probe: Probe
  readonly events: RunEvent[]
  readonly result: RunResult | null
}

async function live(
  c: ChaosCase,
  life: number,
  ledger: ActionLedger | null,
  runId: string,
  crash: () => void,
  provider?: Provider,
  tick?: () => void,
): Promise<Life> {
  vi.clearAllTimers()
  worldTimers.live = 0
  const tasks = planOf(c)
  const probe = new Probe(c, c.initialRequests)
  probe.t0 = Date.now()
  let dead = false
  const die = () => {
    dead = true
    crash()
  }
  const world = chaosWorld(c, probe, life, () => dead, provider && { provider, die })
  const events: RunEvent[] = []
  const ac = new AbortController()
  let abortedFirst = false
  const abort = () => {
    // During run_started the start checks have not run: a limit already reached there is the earlier cause.
    abortedFirst =
      events.length !== 1 &&
      probe.stopped === null &&
      !probe.finished &&
      (c.deadlineMs === undefined || Date.now() - probe.t0 < c.deadlineMs)
    probe.stop("caller abort")
    tally("aborts")
    ac.abort(new Error("caller abort"))
  }
  const abortAt = life === 1 ? c.abortAt : undefined
  const abortTimer = abortAt?.kind === "time" ? setTimeout(abort, abortAt.at) : undefined
  const onEvent = (e: RunEvent) => {
    if (dead) return
    tick?.()
    events.push(e)
    probe.event(e)
    if (abortAt?.kind === "event" && events.length === abortAt.at) abort()
    if (life === 1 && c.durable && events.length === c.durable.crashAtEvent) die()
  }
  const run = runPlan(
    {
      dependency_plan: { tasks, output_task_id: "out", max_concurrency: c.mc },
      initial_usage: { requests: c.initialRequests },
    },
    {
      model: world.model,
      tools: world.tools,
      budget: {
        max_concurrent_requests: c.mcr,
        ...(c.requestLimit !== undefined ? { request_limit: c.requestLimit } : {}),
        ...(c.toolLimit !== undefined ? { tool_calls_limit: c.toolLimit } : {}),
        ...(c.deadlineMs !== undefined ? { deadline_seconds: c.deadlineMs / 1000 } : {}),
      },
      rlm: { max_depth: c.maxDepth, max_turns: c.maxTurns },
      ...(ledger ? { ledger } : {}),
    },
    {
      onEvent,
      signal: ac.signal,
      now: () => Date.now(),
      drain_timeout_seconds: c.drainMs / 1000,
      run_id: runId,
    },
  )
  const out = await drive(run, () => dead)
  if (out === null) {
    // The process died: nothing of it runs on (its timers go with it).
    await new Promise((r) => setImmediate(r))
    vi.clearAllTimers()
    worldTimers.live = 0
    tally("crashes")
    for (const [k, n] of Object.entries(probe.notes)) if (/^(crash|effect) /.test(k)) tally(k, n)
    return { probe, events, result: null }
  }
  if (abortTimer !== undefined) clearTimeout(abortTimer)
  let result: RunResult
  if (out.ok) result = out.value
  else {
    expect(out.error).toBeInstanceOf(RunFailed)
    result = (out.error as RunFailed).result
  }
  tally(`reason ${result.reason}`)
  if (result.drain_incomplete) tally("drain incomplete")
  // Cancelled or not, the harness leaves no timer once every task drained.
  else if (vi.getTimerCount() > worldTimers.live)
    probe.violate(`${vi.getTimerCount() - worldTimers.live} harness timer(s) left after the run settled`)
  await drainClock()
  // Every request and tool, deaf ones included, ended once; no event followed run_finished.
  expect(probe.violations).toEqual([])
  expect(probe.inFlight).toBe(0)
  expect([...probe.toolOpen]).toEqual([])
  expect(probe.toolEnds).toBe(probe.toolStarts)
  expect(events.at(-1)?.type).toBe("run_finished")
  checkInvariants(events, result, Math.min(c.mc, tasks.length))
  expect(result.model_requests_total).toBe(probe.sends)
  if (!ledger) {
    expect(result.usage.requests).toBe(c.initialRequests + probe.sends)
    expect(result.usage.tool_calls).toBe(probe.toolStarts)
  }
  // A resume's usage adds what it replays, charged to the budget before its first task (durable.ts precharge), so
  // it ends within the limits too. Its new sends are checked at each request (Probe), against the initial usage only.
  if (c.requestLimit !== undefined)
    expect(result.usage.requests).toBeLessThanOrEqual(Math.max(c.requestLimit, c.initialRequests))
  if (c.toolLimit !== undefined) expect(result.usage.tool_calls).toBeLessThanOrEqual(c.toolLimit)
  if (result.status === "succeeded") expect(result.output).toMatch(/^answer out #[123]$/)
  else expect(result.output).toBeNull()
  if (abortedFirst) expect(result.reason).toBe("cancelled")
  tally("requests", probe.sends)
  tally("tool runs", probe.toolStarts)
  tally("events", events.length)
  for (const [k, n] of Object.entries(probe.notes)) tally(k, n)
  return { probe, events, result }
}

/** What one call of a side-effecting tool did in a life: ran its body, or not, and how it ended. */
interface FxCall {
  readonly ran: boolean
  readonly error: string | null
  readonly aborted: boolean
}

/** A ledger that records what each side-effecting tool's call did, and each call's identity at the provider. */
class SpyLedger extends ActionLedger {
  calls = new Map<string, FxCall>()
  /** Durable key → the provider's identity of the effect (the call's prompt), over every life. */
  static readonly ids = new Map<string, string>()

  override tool<A extends object, R>(
    options: LedgeredToolOptions,
    fn: ToolBody<ToolArgs<A>, R>,
  ): LedgeredTool<A, R> {
    if (!(options.name in FX_CLASS)) return super.tool(options, fn)
    let ran = false
    const inner = super.tool<A, R>(options, (args, tx) => {
      ran = true
      return fn(args, tx)
    })
    const call = async (args: A, meta?: Parameters<LedgeredTool<A, R>>[1]): Promise<R> => {
      const key = String(meta?.requestId)
      SpyLedger.ids.set(key, String((args as { prompt?: unknown }).prompt))
      try {
        const out = await inner(args, meta)
        this.calls.set(key, { ran, error: null, aborted: false })
        return out
      } catch (e) {
        const aborted = meta?.signal?.aborted === true
        this.calls.set(key, { ran, error: e instanceof Error ? e.name : String(e), aborted })
        throw e
      }
    }
    return Object.assign(call, { toolName: inner.toolName, binding: inner.binding, ledger: inner.ledger })
  }
}

/** The side-effecting tools' rows as a resume finds them. */
async function fxRows(storage: LedgerStorage): Promise<Map<string, LedgerEntry>> {
  const rows = new Map<string, LedgerEntry>()
  for await (const row of storage.list()) if (row.tool in FX_CLASS) rows.set(row.requestId, row)
  return rows
}

/** A row whose effect may have happened and that no operator released to run: the resume must not run its tool. */
const MAYBE = new Set(["IN_FLIGHT", "EXPIRED", "UNKNOWN", "BLOCKED", "FAILED_AFTER_EFFECT"])
/** How a call that must not run may end instead: refused, or stopped while it waited for a live lease. */
const REFUSALS = new Set(["LedgerHardBlockError", "LedgerPollTimeoutError"])

/** The side-effect rules of one resume (`life` ≥ 2), against the rows it started from. */
function checkFx(
  life: Life,
  spy: SpyLedger,
  before: ReadonlyMap<string, LedgerEntry>,
  provider: Provider,
  startedAt: number,
  now: number,
): void {
  for (const [id, n] of provider.applied) expect(n, `effect ${id} applied ${n} times`).toBeLessThanOrEqual(1)
  for (const [key, call] of spy.calls) {
    const prior = before.get(key)
    if (prior && resolvedOutcome(prior, startedAt) === "IN_FLIGHT") tally("fx calls on a live row")
    const outcome = prior ? resolvedOutcome(prior, now) : null
    const released = prior?.operatorResolution ?? null
    tally(
      `fx calls ${call.ran ? "ran" : call.error === null ? "replayed" : `${call.aborted ? "stopped by" : "refused"} ${call.error}`} from ${outcome ?? "no row"}`,
    )
    if (call.error === null && !call.ran)
      expect(outcome, `${key} answered without running or a completed row`).toBe("COMPLETED")
    if (released === "completed") expect(call.ran, `${key} released as completed ran again`).toBe(false)
    if (released === "not_executed" && call.error !== null && !call.aborted)
      expect(call.ran, `${key} released as not executed still refused (${call.error})`).toBe(true)
    if (outcome === null || !MAYBE.has(outcome) || released === "not_executed") continue
    tally(`fx resumed ${outcome}`)
    expect(call.ran, `${key} (${outcome}) ran its effect again`).toBe(false)
    if (!call.aborted) expect(REFUSALS.has(call.error ?? ""), `${key}: ${call.error}`).toBe(true)
    // A task's own call fails it: the run never succeeds past a refused effect.
    if (call.error === "LedgerHardBlockError" && /^[^/]+\/[^/]+\/r\d+\/c\d+$/.test(key))
      expect(life.result?.status).not.toBe("succeeded")
  }
  if (life.result?.failure?.error_type) tally(`fx resume failed ${life.result.failure.error_type}`)
}

async function runCase(c: ChaosCase): Promise<void> {
  tally("cases")
  if (c.fx) tally("fx cases")
  const runId = `run:${c.seed.toString(16).padStart(32, "0")}`
  const provider = c.fx ? new Provider() : undefined
  if (!c.durable) {
    await live(c, 1, null, runId, () => {}, provider)
    return
  }
  tally("durable cases")
  const storage = new MemoryLedgerStorage()
  const clock = new ManualClock()
  let crashed = false
  const early = c.fx?.early
  const ledgerOf = (store: LedgerStorage, owner: string) =>
    new SpyLedger({
      storage: store,
      clock,
      leaseTtl: 30,
      owner,
      onWarning: () => {},
      ...(early?.pollTimeout ? { pollTimeout: early.pollTimeout } : {}),
    })
  const first = await live(
    c,
    1,
    ledgerOf(
      crashable(storage, () => crashed),
      "first",
    ),
    runId,
    () => {
      crashed = true
    },
    provider,
    // Before an early resume, the ledger's clock moves with the run, so rows claimed later lapse later: the resume
    // finds some effect rows still live after their task's row lapsed, and waits for them.
    early ? () => clock.advance(0.5) : undefined,
  )
  const completed = new Set<string>()
  for await (const row of storage.list())
    if (row.terminalOutcome === "COMPLETED") completed.add(row.requestId)
  const finished = first.events
    .filter((e) => e.type === "task_succeeded")
    .map((e) => (e as { task_id: string }).task_id)
  // The dead run's leases lapse before the resume, unless it comes early.
  if (early && crashed) tally("early resumes")
  clock.advance(early ? early.advance : 120)
  // The side-effecting cases resume on the plain store: an early resume polls live rows on the ledger's clock, which
  // nothing moves while the lag's fake timers wait (the run hung), and their check is effects, not the budget.
  const ledger = ledgerOf(provider ? storage : laggy(storage, c.seed), "resume")
  const before = await fxRows(storage)
  const resumedAt = clock.now()
  // A harness tool gets no `tx`, so a call that fails after its effect (its answer aborted) reads as before it.
  for (const row of before.values())
    if (
      row.terminalOutcome === "FAILED_BEFORE_EFFECT" &&
      provider?.applied.has(SpyLedger.ids.get(row.requestId) ?? "")
    )
      tally(`fx ${row.tool} row FAILED_BEFORE_EFFECT after its effect`)
  const second = await live(c, 2, ledger, runId, () => {}, provider)
  if (provider) checkFx(second, ledger, before, provider, resumedAt, clock.now())
  const s = second.probe
  for (const t of finished) {
    tally("replayed tasks")
    expect(s.sent.filter((k) => k.startsWith(`${t}@`))).toEqual([])
    expect(s.toolsRun.filter((k) => k.startsWith(`${t}#`))).toEqual([])
    // Replayed wherever it ends; a resume that stopped first may not have reached it (its row is checked below).
    const done = second.events.find((e) => e.type === "task_succeeded" && e.task_id === t)
    if (done || second.result?.status === "succeeded") expect(done).toMatchObject({ replayed: true })
    // Read unlagged: the fake clock no longer runs.
    const row = await storage.get(`${runId}/${t}`)
    expect((row?.result as { output?: unknown } | null)?.output).toBe(first.probe.texts.get(t))
    if (second.result?.status === "succeeded")
      expect(second.result.tasks.find((r) => r.task_id === t)?.output).toBe(first.probe.texts.get(t))
  }
  for (const key of completed) {
    const m = /^[^/]+\/([^/]+)\/r(\d+)(?:\/c(\d+))?$/.exec(key)
    if (!m) continue
    const [, task, step, call] = m
    tally("replayed rows")
    if (call === undefined) expect(s.sent).not.toContain(`${task}@0#${step}`)
    else expect(s.toolsRun).not.toContain(`${task}#c${step}_${call}`)
  }
  if (!provider) return
  // An operator releases every row the resume refused, by the provider's log: applied, as completed with the
  // provider's answer; not, as not executed. The next resume then replays it, or runs it once.
  const blocked = [...ledger.calls].filter(([, call]) => call.error === "LedgerHardBlockError")
  if (blocked.length === 0) return
  clock.advance(120)
  const stuck = new Set((await ledger.listTransitions({ stuck: true })).map((row) => row.requestId))
  for (const [key] of blocked) {
    if (!stuck.has(key))
      tally(`fx blocked but not listed stuck (${(await ledger.get(key))?.terminalOutcome})`)
    const id = SpyLedger.ids.get(key) as string
    const applied = provider.applied.has(id)
    await ledger.release(key, {
      verified: applied ? "completed" : "not_executed",
      ...(applied ? { result: provider.results.get(id) } : {}),
      by: "chaos",
      reason: "checked the provider's log",
      overrideDeathSignal: "the process was killed",
    })
    tally(`fx released ${applied ? "completed" : "not_executed"}`)
  }
  const third = ledgerOf(storage, "after release")
  const rows = await fxRows(storage)
  const releasedAt = clock.now()
  const last = await live(c, 3, third, runId, () => {}, provider)
  checkFx(last, third, rows, provider, releasedAt, clock.now())
  for (const [key] of blocked) {
    const call = third.calls.get(key)
    tally(`fx after release ${call ? (call.ran ? "ran" : (call.error ?? "replayed")) : "not reached"}`)
  }
}

beforeAll(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] })
})
afterAll(() => {
  vi.useRealTimers()
  if (knobs.report) console.log(`harness chaos: ${JSON.stringify(totals)}`)
})

describe("harness chaos properties", () => {
  it("failures, aborts, deadlines, sub-queries and crash-resume keep fail-fast, budgets and replay", async () => {
    const started = performance.now()
    for (let i = 0; i === 0 || performance.now() - started < knobs.seconds * 1000; i++)
      await fc.assert(fc.asyncProperty(arbCase, runCase), { numRuns: RUNS, seed: knobs.base + i })
  }, 600_000)
})
