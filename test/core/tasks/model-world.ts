// One seeded run of the task ledger's model-based test (model-random.test.ts): workers (TaskLedgers with their own
// connections) over one shared task store and one SchedulerClock; task bodies that stop at points the scheduler
// resumes, renews or abandons; worker crashes and restarts, partitions and connection resets, callers that give up,
// an operator's releases and listings; and a reference model (model-identity.ts for ids, the write log for leases)
// checked after every step and at the end. Timers (timed renewals, the lease watch) are fake and move with the clock.
import { AsyncLocalStorage } from "node:async_hooks"
import { isDeepStrictEqual } from "node:util"
import { seededRandom } from "../../../src/conformance/random.ts"
import {
  type TaskContext,
  TaskIdAmbiguousError,
  TaskLeaseLostError,
  TaskLedger,
  TaskLedgerPendingError,
  type TaskRecord,
  TaskReleaseRefusedError,
  TaskResultUnstorableError,
  type TaskStore,
  TaskStoreUnavailableError,
} from "../../../src/tasks.ts"
import { SchedulerClock } from "../ledger/model-clock.ts"
import { countError, failedRun, pickOne, RunLog, shuffled, untyped } from "../model-kit.ts"
import { type Args, modelRequestId, type Value } from "./model-identity.ts"
import { ObservedTaskStore, WorkerLink } from "./model-store.ts"

const LEASE = 10
const POLL = 1
const POLL_TIMEOUT = 15

type TaskName = "report" | "import" | "slow"
const TASKS: readonly TaskName[] = ["report", "import", "slow"]
const SPEC: Record<TaskName, { idFrom: readonly string[] | null; ttl: number; wait?: boolean }> = {
  report: { idFrom: ["region", "day"], ttl: LEASE },
  import: { idFrom: null, ttl: LEASE },
  // Its own lease, and waiting by default (a call's { wait } overrides it).
  slow: { idFrom: ["batch"], ttl: 2 * LEASE, wait: true },
}
const ttlOf = (task: string): number => SPEC[task as TaskName]?.ttl ?? LEASE

/** What a body throws on purpose; its caller must get this very object. */
class BodyFailure extends Error {
  override readonly name = "BodyFailure"
}
/** A caller's abort reason; the caller must get this very object when it gives up. */
class CallerGaveUp extends Error {
  override readonly name = "CallerGaveUp"
}

type Outcome = "return" | "throw" | "cycle"
type Command = "go" | "renew"

interface Worker {
  readonly slot: number
  readonly name: string
  readonly ledger: TaskLedger
  readonly link: WorkerLink
  readonly tasks: Record<TaskName, (args: unknown, meta?: Record<string, unknown>) => Promise<unknown>>
  alive: boolean
}

interface Attempt {
  readonly n: number
  readonly call: Call
  readonly rid: string
  readonly fence: number
  readonly worker: Worker
  readonly ctx: TaskContext
  readonly outcome: Outcome
  /** Throws ctx.signal's reason when it sees it aborted; rethrows a refused renewal. */
  readonly obeys: boolean
  resume: ((c: Command) => void) | null
  point: string
  state: "running" | "crashed" | "done"
  returned: unknown
  thrown: unknown
}

interface Call {
  readonly n: number
  readonly worker: Worker
  readonly task: TaskName
  readonly args: Args | null | undefined
  readonly meta: { taskId?: string; runId?: string; wait?: boolean; signal?: AbortSignal }
  readonly rid: string | "forged"
  readonly kind: string
  readonly drive: boolean
  readonly abort: AbortController | null
  readonly failuresBefore: number
  reason: CallerGaveUp | null
  status: "pending" | "ok" | "error"
  value: unknown
  error: unknown
  attempt: Attempt | null
  checked: boolean
}

/** One claim the write log saw land, and the lease the model gives it: ttl from the claim or its last renewal. */
interface Claim {
  readonly rid: string
  readonly fence: number
  readonly writer: string
  leaseUntil: number
  attempt: Attempt | null
  ended: boolean
}

export interface TaskModelStats {
  steps: number
  calls: number
  runs: number
  replays: number
  claims: number
  takeovers: number
  renewals: number
  crashes: number
  releases: number
  releaseRefusals: number
  linkFailures: number
  aborts: number
  forged: number
  maxPending: number
  errors: Record<string, number>
}

const json = (v: unknown): unknown => (v === undefined ? null : JSON.parse(JSON.stringify(v)))
const nextTick = (): Promise<void> => new Promise((r) => setImmediate(r))

// One for every world: each AsyncLocalStorage instance stays enabled for the process, and every promise pays for
// each one (a soak of 3000 worlds slowed to 200 ms a run).
const callOfBody = new AsyncLocalStorage<Call>()

export interface FakeTimers {
  advance(ms: number): void
  clear(): void
}

export class TaskModelWorld {
  readonly seed: number
  readonly #rand: () => number
  readonly clock = new SchedulerClock()
  readonly store: ObservedTaskStore
  readonly #out = new RunLog()
  readonly trace = this.#out.trace
  readonly violations = this.#out.violations
  readonly stats: TaskModelStats = {
    steps: 0,
    calls: 0,
    runs: 0,
    replays: 0,
    claims: 0,
    takeovers: 0,
    renewals: 0,
    crashes: 0,
    releases: 0,
    releaseRefusals: 0,
    linkFailures: 0,
    aborts: 0,
    forged: 0,
    maxPending: 0,
    errors: {},
  }
  readonly #timers: FakeTimers
  readonly #als = callOfBody
  readonly #workers: Worker[] = []
  readonly #ops: TaskLedger
  readonly #calls: Call[] = []
  readonly #attempts: Attempt[] = []
  /** request id → its claims in the order they landed. */
  readonly #claims = new Map<string, Claim[]>()
  /** request id → the one completed result it may ever hold. */
  readonly #completed = new Map<string, unknown>()
  /** Released and not claimed since: a second release is refused until the task runs again. */
  readonly #released = new Set<string>()
  readonly #firstCall = new Map<string, Call>()
  /** request id → when its last write landed. */
  readonly #lastWrite = new Map<string, number>()
  readonly #timed: boolean
  /** What the operator's release in progress may write (the write log checks it). */
  #release: { rid: string; force: boolean; result: unknown } | null = null
  #restarts = 0

  constructor(seed: number, inner: TaskStore, timers: FakeTimers) {
    this.seed = seed
    this.#rand = seededRandom(seed)
    this.#timers = timers
    timers.clear()
    this.store = new ObservedTaskStore(inner, (w, rid, prev, next) => this.#onWrite(w, rid, prev, next))
    // Timed renewals (a third of each lease) or none: then only a body's renewLease() keeps a lease.
    this.#timed = this.#rand() < 0.6
    const workers = 2 + Math.floor(this.#rand() * 3)
    this.#out.log(`world: ${workers} workers, timed renewals ${this.#timed}`)
    for (let i = 0; i < workers; i++) this.#workers.push(this.#worker(i, `w${i}`))
    const ops = new WorkerLink("ops", this.store, () => false)
    this.#ops = new TaskLedger({ storage: ops, clock: this.clock, owner: "ops", onWarning: () => {} })
  }

  #worker(slot: number, name: string): Worker {
    const link = new WorkerLink(name, this.store, () => this.#rand() < 0.4)
    const ledger = new TaskLedger({
      storage: link,
      clock: this.clock,
      owner: name.replace(/r\d+$/, this.#rand() < 0.5 ? "" : "$&"),
      leaseTtl: LEASE,
      leaseRenewInterval: this.#timed ? null : 0,
      pollInterval: POLL,
      pollTimeout: POLL_TIMEOUT,
      onWarning: () => {},
    })
    const w = { slot, name, ledger, link, alive: true } as Worker
    const tasks = {} as Worker["tasks"]
    for (const task of TASKS) {
      const spec = SPEC[task]
      tasks[task] = ledger.task(
        {
          name: task,
          ...(spec.idFrom ? { idFrom: spec.idFrom } : {}),
          ...(spec.ttl !== LEASE ? { leaseTtl: spec.ttl } : {}),
          ...(spec.wait ? { wait: true } : {}),
        },
        (args: object, ctx) => this.#body(w, task, args as Args, ctx),
      ) as Worker["tasks"][TaskName]
    }
    ;(w as { tasks: Worker["tasks"] }).tasks = tasks
    return w
  }

  // ---- the run ----------------------------------------------------------------------------------------------

  async run(steps: number): Promise<void> {
    try {
      for (this.#out.step = 1; this.#out.step <= steps; this.#out.step++) {
        await this.#randomStep()
        await this.#settle()
        this.#checkCalls()
        this.#fail()
      }
      this.stats.steps = steps
      await this.#finish()
      this.#fail()
    } finally {
      this.#timers.clear()
    }
  }

  async #randomStep(): Promise<void> {
    const r = this.#rand()
    const resumable = this.#attempts.filter((a) => a.resume)
    if (r < 0.28 || this.#calls.length === 0) return this.#startRandomCall()
    if (r < 0.5 && resumable.length) return this.#resume(this.#pick(resumable), "go")
    if (r < 0.55 && resumable.length) return this.#resume(this.#pick(resumable), "renew")
    if (r < 0.59) return this.#crash(this.#pick(this.#workers))
    if (r < 0.65) return this.#network()
    if (r < 0.68) return this.#giveUp()
    if (r < 0.9) {
      const big = this.#rand() < 0.3
      return this.#advance(big ? LEASE + Math.floor(this.#rand() * 16) : 1 + Math.floor(this.#rand() * 3))
    }
    return this.#operatorStep()
  }

  /** Moves time a second at a time, with the fake timers beside it, letting what woke run before the next second. */
  async #advance(seconds: number): Promise<void> {
    let woke = 0
    for (let i = 0; i < seconds; i++) {
      woke += this.clock.advance(1, (xs) => this.#shuffle(xs))
      this.#timers.advance(1000)
      await this.#settle()
    }
    this.#out.log(`clock +${seconds}s (woke ${woke})`)
  }

  /** Waits until nothing queued at the store and no microtask is left. */
  async #settle(): Promise<void> {
    for (let quiet = 0, i = 0; quiet < 2; i++) {
      if (i === 10_000)
        return this.#out.violate(`the store never went quiet (${this.store.busy} operations queued)`)
      await nextTick()
      quiet = this.store.busy === 0 ? quiet + 1 : 0
    }
  }

  #randomArgs(task: TaskName): Args {
    const pick = <T>(xs: readonly T[]): T => this.#pick(xs)
    if (task === "report") {
      const a: Args = {}
      // 1 and "1", true and "True", null and "None" are one id (Python's str()); "eu:day=1" would forge one.
      a.region = pick(["eu", "us", "eu", "us", "eu:day=1", "eu:note=x"])
      if (this.#rand() < 0.9) a.day = pick<Value>([1, "1", 2, true, "True", null, "None"])
      if (this.#rand() < 0.3) a.note = pick(["x", "y"])
      return a
    }
    if (task === "import") {
      // Key order is not part of the hash (sort_keys); 1 and "1" are two ids; "é" is \u00e9 in the hash input.
      const batch = pick(["b1", "b2", "é"])
      const size = pick<Value>([1, "1", 2])
      return this.#rand() < 0.5 ? { batch, size } : { size, batch }
    }
    return { batch: pick(["s1", "s2"]) }
  }

  #startRandomCall(): void {
    const worker = this.#pick(this.#workers.filter((w) => w.alive))
    const earlier = this.#calls.filter((c) => !c.drive && c.rid !== "forged")
    const r = this.#rand()
    if (!earlier.length || r < 0.45) {
      const task = this.#pick(TASKS)
      const m = this.#rand()
      const meta =
        m < 0.1
          ? { taskId: `T-${1 + Math.floor(this.#rand() * 2)}` }
          : m < 0.2
            ? { runId: `r${this.#tick()}` }
            : {}
      let args: Args | null | undefined = this.#randomArgs(task)
      // No arguments: the same as {} (docs: "A call with undefined or null arguments is a call with {}").
      if (task === "import" && this.#rand() < 0.08) args = this.#pick([null, undefined, {}])
      // task_id in the arguments is the same as { taskId }; a null one is no id.
      if (task === "report" && this.#rand() < 0.08)
        args = { ...args, task_id: this.#rand() < 0.5 ? "T-1" : null }
      this.#start(worker, task, args, meta, "fresh")
      return
    }
    const prior = this.#pick(earlier)
    const args = prior.args && { ...prior.args }
    const { taskId, runId } = prior.meta
    const same = { ...(taskId ? { taskId } : {}), ...(runId ? { runId } : {}) }
    if (r < 0.8) this.#start(worker, prior.task, args, same, "again")
    else this.#start(worker, prior.task, args, { runId: `r${this.#tick()}` }, "new-id")
  }

  /** A run id no call used yet. */
  #tick(): number {
    return this.#calls.length
  }

  #start(
    worker: Worker,
    task: TaskName,
    args: Args | null | undefined,
    ids: { taskId?: string; runId?: string },
    kind: string,
    drive = false,
  ): Call {
    const rid = modelRequestId({ task, idFrom: SPEC[task].idFrom, args: args ?? {}, ...ids })
    const abort = !drive && this.#rand() < 0.2 ? new AbortController() : null
    const wait = drive ? true : this.#rand() < 0.3 ? true : this.#rand() < 0.2 ? false : undefined
    const meta = {
      ...ids,
      ...(wait !== undefined ? { wait } : {}),
      ...(abort ? { signal: abort.signal } : {}),
    }
    const call: Call = {
      n: this.#calls.length,
      worker,
      task,
      args,
      meta,
      rid,
      kind,
      drive,
      abort,
      failuresBefore: worker.link.failures,
      reason: null,
      status: "pending",
      value: undefined,
      error: undefined,
      attempt: null,
      checked: false,
    }
    this.#calls.push(call)
    this.stats.calls++
    if (rid === "forged") this.stats.forged++
    else if (!this.#firstCall.has(rid)) this.#firstCall.set(rid, call)
    this.#out.log(
      `c${call.n} ${worker.name} ${kind} ${task}(${JSON.stringify(args)}) ${JSON.stringify(meta)} -> ${rid}`,
    )
    this.#als
      .run(call, () => worker.tasks[task](args, meta))
      .then(
        (value) => {
          call.status = "ok"
          call.value = value
          if (!call.attempt) this.stats.replays++
          this.#out.log(
            `c${call.n} ok${call.attempt ? "" : " (replay)"} ${JSON.stringify(value)?.slice(0, 80)}`,
          )
        },
        (error: unknown) => {
          call.status = "error"
          call.error = error
          const name = countError(this.stats.errors, error)
          this.#out.log(
            `c${call.n} error ${name}: ${error instanceof Error ? error.message.slice(0, 100) : ""}`,
          )
        },
      )
    const pending = this.#calls.filter((c) => c.status === "pending").length
    this.stats.maxPending = Math.max(this.stats.maxPending, pending)
    return call
  }

  // ---- the bodies -----------------------------------------------------------------------------------------

  async #body(w: Worker, task: TaskName, args: Args, ctx: TaskContext): Promise<unknown> {
    const call = this.#als.getStore()
    if (!call) throw new Error("a body ran outside any call")
    const rid = ctx.requestId
    if (call.attempt) this.#out.violate(`c${call.n} ran its body twice`)
    if (call.worker !== w)
      this.#out.violate(`c${call.n}'s body ran on ${w.name}, not its worker ${call.worker.name}`)
    if (rid !== call.rid) this.#out.violate(`c${call.n} ran under '${rid}', its id is '${call.rid}'`)
    if (call.reason) this.#out.violate(`c${call.n} gave up before its claim, yet its body ran`)
    // The body gets the call's arguments without task_id and run_id; none for null or undefined.
    const { task_id: _t, run_id: _r, ...clean } = call.args ?? {}
    if (!isDeepStrictEqual(args, clean)) this.#out.violate(`c${call.n}'s body got ${JSON.stringify(args)}`)
    const claim = this.#claims.get(rid)?.at(-1)
    if (!claim || claim.fence !== ctx.fence || claim.writer !== w.link.name || claim.attempt)
      this.#out.violate(
        `c${call.n}'s body started under fence ${ctx.fence} without a claim of its own that landed`,
      )
    const r = this.#rand()
    const a: Attempt = {
      n: this.#attempts.length,
      call,
      rid,
      fence: ctx.fence,
      worker: w,
      ctx,
      outcome: call.drive ? "return" : r < 0.15 ? "throw" : r < 0.2 ? "cycle" : "return",
      obeys: this.#rand() < 0.5,
      resume: null,
      point: "",
      state: "running",
      returned: undefined,
      thrown: undefined,
    }
    if (claim) claim.attempt = a
    call.attempt = a
    this.#attempts.push(a)
    this.stats.runs++
    this.#out.log(
      `a${a.n} c${call.n} ${w.name} runs ${rid} fence ${ctx.fence} ${a.outcome}${a.obeys ? " obeys" : ""}`,
    )
    try {
      if (!call.drive) {
        await this.#stop(a, "start")
        await this.#stop(a, "end")
      }
      if (a.outcome === "throw") {
        a.thrown = new BodyFailure(`a${a.n} failed`)
        throw a.thrown
      }
      if (a.outcome === "cycle") {
        const cycle: Record<string, unknown> = { a: a.n }
        cycle.self = cycle
        a.returned = cycle
        return cycle
      }
      // A Date comes back from a replay as its ISO string: the stored result is the JSON.
      a.returned = { task, rid, fence: ctx.fence, a: a.n, at: new Date(this.clock.now() * 1000) }
      return a.returned
    } catch (e) {
      if (a.thrown === undefined) a.thrown = e
      throw e
    } finally {
      if (a.state === "running") a.state = "done"
    }
  }

  async #stop(a: Attempt, point: string): Promise<void> {
    for (;;) {
      const command = await new Promise<Command>((resume) => {
        a.point = point
        a.resume = resume
      })
      a.resume = null
      if (a.obeys && a.ctx.signal.aborted) {
        a.thrown = a.ctx.signal.reason
        throw a.thrown
      }
      if (command === "go") return
      try {
        await a.ctx.renewLease()
        this.#out.log(`a${a.n} renewed`)
      } catch (e) {
        this.#typed(e, `a${a.n} renewal`)
        if (!(e instanceof TaskLeaseLostError || e instanceof TaskStoreUnavailableError))
          this.#out.violate(`a${a.n} renewal failed with ${String(e)}`)
        if (e instanceof TaskLeaseLostError && !a.ctx.signal.aborted)
          this.#out.violate(`a${a.n} lost its lease, yet ctx.signal is not aborted`)
        this.#out.log(`a${a.n} renewal refused: ${(e as Error).name}`)
        if (a.obeys) {
          a.thrown = e
          throw e
        }
      }
    }
  }

  // ---- scheduler actions ----------------------------------------------------------------------------------

  #resume(a: Attempt, command: Command): void {
    const resume = a.resume
    if (!resume) return
    this.#out.log(`a${a.n} ${command} at ${a.point}`)
    resume(command)
  }

  /** The worker's process dies (its bodies, polls, timers' writes with it) and a new one starts in its slot. */
  #crash(w: Worker): void {
    if (!w.alive) return
    w.alive = false
    w.link.set("dead")
    for (const a of this.#attempts)
      if (a.worker === w && a.state === "running") {
        a.state = "crashed"
        a.resume = null
      }
    this.stats.crashes++
    // A restart may keep the owner name (a host name) or take a new one.
    const next = this.#worker(w.slot, `w${w.slot}r${++this.#restarts}`)
    this.#workers[w.slot] = next
    this.#out.log(`${w.name} CRASHED; ${next.name} (owner ${next.ledger.owner}) starts`)
  }

  #network(): void {
    const w = this.#pick(this.#workers)
    const link = w.link.link === "up" ? (this.#rand() < 0.5 ? "partitioned" : "failing") : "up"
    w.link.set(link)
    this.#out.log(`${w.name} link ${link}`)
  }

  #giveUp(): void {
    const calls = this.#calls.filter((c) => c.status === "pending" && c.abort && !c.reason)
    if (!calls.length) return
    const call = this.#pick(calls)
    call.reason = new CallerGaveUp(`c${call.n} gave up`)
    this.stats.aborts++
    this.#out.log(`c${call.n} gives up`)
    call.abort?.abort(call.reason)
  }

  async #operatorStep(): Promise<void> {
    const rows = await this.#ops.list()
    this.#checkList(rows)
    if (this.#rand() < 0.3 || !rows.length) return
    const row = this.#pick(rows)
    await this.#releaseOne(row.row.request_id, this.#rand() < 0.3)
  }

  #checkList(rows: readonly TaskRecord[]): void {
    const ids = rows.map((r) => r.row.request_id)
    const known = [...this.#claims.keys()].sort()
    if (!isDeepStrictEqual([...ids].sort(), known))
      this.#out.violate(`list() holds ${ids.length} tasks, the write log ${known.length}`)
    for (let i = 1; i < rows.length; i++)
      if ((rows[i]?.row.started_at ?? 0) < (rows[i - 1]?.row.started_at ?? 0))
        this.#out.violate("list() is not sorted by started_at")
  }

  async #releaseOne(rid: string, force: boolean): Promise<void> {
    const r = this.#rand()
    const completed = r < 0.4
    const result = { released: this.#out.step }
    const invalid = this.#rand() < 0.08
    const options = {
      verified: completed ? ("completed" as const) : ("not_executed" as const),
      ...(completed ? { result } : {}),
      by: invalid ? " " : "ops",
      reason: "model: worker gone",
      ...(force ? { force: true } : {}),
    }
    this.#release = { rid, force, result: completed ? result : null }
    try {
      await this.#ops.release(rid, options)
      this.stats.releases++
      if (invalid) this.#out.violate(`release of ${rid} with a blank 'by' was accepted`)
      this.#out.log(`op released ${rid} ${options.verified}${force ? " (force)" : ""}`)
    } catch (e) {
      this.#typed(e, `release ${rid}`)
      if (!(e instanceof TaskReleaseRefusedError))
        this.#out.violate(`release ${rid} failed with ${String(e)}`)
      this.stats.releaseRefusals++
      // Refused only when the task is completed, released and not run since, or held under a live lease without force
      // (or the input is bad).
      const claim = this.#claims.get(rid)?.at(-1)
      const live = claim !== undefined && !claim.ended && this.clock.now() < claim.leaseUntil
      if (!invalid && !this.#completed.has(rid) && !this.#released.has(rid) && !(live && !force))
        this.#out.violate(`release of ${rid} was refused, yet it is not completed nor live: ${String(e)}`)
      this.#out.log(`op release ${rid} refused: ${(e as Error).message.slice(0, 80)}`)
    } finally {
      this.#release = null
    }
  }

  // ---- the write log: every write that landed, checked against the model's leases ---------------------------------

  #onWrite(writer: string, rid: string, prev: TaskRecord | null, next: TaskRecord): void {
    const now = this.clock.now()
    if (next.row.request_id !== rid)
      this.#out.violate(`a write under ${rid} holds row ${next.row.request_id}`)
    if (prev?.row.status === "completed")
      this.#out.violate(`${rid} was completed and ${writer} rewrote it ${next.row.status}`)
    const claims = this.#claims.get(rid) ?? []
    this.#claims.set(rid, claims)
    const since = this.#lastWrite.get(rid) ?? -Infinity
    this.#lastWrite.set(rid, now)
    // A claim or renewal leases the task for its ttl from when it was issued: after the write before it landed (it
    // read that version, or waited for it: renewals go one at a time) and no later than now. One issued long ago
    // lands already lapsed (its answer was held up by a partition): the model keeps the lease it wrote.
    const leased = (): number => {
      const until = next.lease?.lease_until
      const issued = (until ?? Infinity) - ttlOf(next.row.task)
      if (typeof until !== "number" || issued > now || issued < since)
        this.#out.violate(
          `${writer} leased ${rid} until ${until}: not ${ttlOf(next.row.task)}s from between ${since} and ${now}`,
        )
      return until ?? Infinity
    }
    const holder = claims.at(-1)
    const fence = next.lease?.fence ?? 0
    const prevFence = prev?.lease?.fence ?? 0
    if (next.row.status === "in-flight" && (prev === null || fence !== prevFence)) {
      // A claim: the task is new, failed (it runs again), or its holder's lease lapsed by the model's clock.
      if (writer === "ops") this.#out.violate(`the operator's release of ${rid} wrote a claim`)
      if (fence !== prevFence + 1) this.#out.violate(`${rid} claimed under fence ${fence} after ${prevFence}`)
      if (prev?.row.status === "in-flight" && holder) {
        if (now < holder.leaseUntil)
          this.#out.violate(
            `${writer} took ${rid} over from ${holder.writer} (fence ${holder.fence}), whose lease runs until ${holder.leaseUntil} > ${now}`,
          )
        const a = holder.attempt
        // A body still running where another worker takes over must have been told to stop (the lease watch).
        if (a && a.state === "running" && a.worker.alive && !a.ctx.signal.aborted)
          this.#out.violate(`${writer} took ${rid} over while a${a.n} runs with its signal not aborted`)
        this.stats.takeovers++
      }
      if (holder) holder.ended = true
      this.#released.delete(rid)
      claims.push({ rid, fence, writer, leaseUntil: leased(), attempt: null, ended: false })
      this.stats.claims++
      this.#out.log(`W ${writer} claims ${rid} fence ${fence}`)
      return
    }
    if (writer === "ops") {
      const release = this.#release
      if (!release || release.rid !== rid) {
        this.#out.violate(`the operator wrote ${rid} outside a release`)
        return
      }
      if (
        prev?.row.status === "in-flight" &&
        holder &&
        !holder.ended &&
        now < holder.leaseUntil &&
        !release.force
      )
        this.#out.violate(`the operator released ${rid} under ${holder.writer}'s live lease without force`)
      if (next.row.status === "in-flight") this.#out.violate(`a release left ${rid} in flight`)
      if (next.row.status === "completed" && !isDeepStrictEqual(next.row.result, release.result))
        this.#out.violate(`the release of ${rid} stored ${JSON.stringify(next.row.result)}`)
      if (holder) holder.ended = true
      this.#released.add(rid)
    } else {
      // A renewal or an outcome: only from the holder's own connection, under its fence, on its live claim.
      if (!holder || holder.ended || holder.writer !== writer || holder.fence !== fence) {
        this.#out.violate(
          `${writer} wrote ${rid} ${next.row.status} under fence ${fence}; the holder is ${holder?.writer} fence ${holder?.fence}${holder?.ended ? " (ended)" : ""}`,
        )
        return
      }
      if (next.row.status === "in-flight") {
        holder.leaseUntil = leased()
        this.stats.renewals++
        return
      }
      holder.ended = true
      const a = holder.attempt
      if (next.row.status === "completed") {
        if (a?.outcome !== "return" || a.returned === undefined)
          this.#out.violate(`${rid} recorded completed for fence ${fence}, whose body did not return`)
        else if (!isDeepStrictEqual(next.row.result, json(a.returned)))
          this.#out.violate(
            `${rid} stored ${JSON.stringify(next.row.result)}, a${a.n} returned ${JSON.stringify(a.returned)}`,
          )
      } else if (a && a.thrown === undefined && a.outcome !== "cycle")
        this.#out.violate(`${rid} recorded failed for a${a.n}, whose body returned`)
    }
    if (next.row.status === "completed") this.#completed.set(rid, next.row.result)
    this.#out.log(`W ${writer} ${rid} ${next.row.status}`)
  }

  // ---- answers --------------------------------------------------------------------------------------------------

  #checkCalls(): void {
    for (const call of this.#calls) {
      if (call.status === "pending" || call.checked) continue
      call.checked = true
      this.#checkAnswer(call)
    }
  }

  #checkAnswer(call: Call): void {
    if (call.rid === "forged" && !(call.error instanceof TaskIdAmbiguousError))
      this.#out.violate(
        `c${call.n}'s id_from value forges another id, yet it ${call.status === "ok" ? "answered" : `failed with ${String(call.error)}`}`,
      )
    if (call.status === "ok") {
      const a = call.attempt
      if (a) {
        // Its own run's value, even when the completion was refused (taken over or released meanwhile).
        if (call.value !== a.returned)
          this.#out.violate(`c${call.n} got ${JSON.stringify(call.value)}, not a${a.n}'s value`)
        if (a.outcome !== "return") this.#out.violate(`c${call.n} answered, yet a${a.n} was to ${a.outcome}`)
      } else {
        const stored = this.#completed.get(call.rid)
        if (stored === undefined || !isDeepStrictEqual(call.value, stored))
          this.#out.violate(
            `c${call.n} replayed ${JSON.stringify(call.value)}; the stored result is ${JSON.stringify(stored)}`,
          )
      }
      return
    }
    const e = call.error
    if (call.reason && e === call.reason) return
    if (call.attempt && e === call.attempt.thrown) {
      if (!(e instanceof BodyFailure)) this.#typed(e, `c${call.n}`)
      return
    }
    this.#typed(e, `c${call.n}`)
    const allowed =
      (e instanceof TaskLedgerPendingError && e.requestId === call.rid) ||
      (e instanceof TaskIdAmbiguousError && call.rid === "forged") ||
      (e instanceof TaskResultUnstorableError && call.attempt?.outcome === "cycle") ||
      (e instanceof TaskStoreUnavailableError && call.worker.link.failures > call.failuresBefore)
    if (!allowed) this.#out.violate(`c${call.n} (${call.kind}) failed with ${String(e)}`)
  }

  /** Every error has one root (MyceliumError) and a snake_case code. */
  #typed(e: unknown, where: string): void {
    const wrong = untyped(e)
    if (wrong) this.#out.violate(`${where}: ${wrong}`)
  }

  // ---- the end: every body finished or died, every lease lapsed, every id driven to its answer ----------------

  async #finish(): Promise<void> {
    this.#out.log("== drain")
    for (const w of this.#workers) if (w.link.link !== "up") w.link.set("up")
    for (let i = 0; i < 200 && this.#calls.some((c) => this.#waiting(c)); i++) {
      for (const a of this.#shuffle(this.#attempts.filter((x) => x.resume))) this.#resume(a, "go")
      await this.#settle()
      await this.#advance(POLL)
    }
    for (const c of this.#calls.filter((x) => this.#waiting(x))) this.#out.violate(`c${c.n} never settled`)
    this.#checkCalls()
    this.#fail()

    // Every body finished or crashed: past every lease, no row may be held.
    await this.#advance(3 * 2 * LEASE)
    const rows = await this.#ops.list()
    this.#checkList(rows)
    const now = this.clock.now()
    for (const t of rows) {
      const until = t.lease?.lease_until
      if (t.row.status === "in-flight" && (until === null || until === undefined || now < until))
        this.#out.violate(
          `${t.row.request_id} stays in flight under a live lease after every worker ended (${until})`,
        )
    }
    this.#fail()

    this.#out.log("== drive")
    for (const first of this.#firstCall.values()) {
      const worker = this.#pick(this.#workers)
      const { taskId, runId } = first.meta
      const ids = { ...(taskId ? { taskId } : {}), ...(runId ? { runId } : {}) }
      const call = this.#start(worker, first.task, first.args && { ...first.args }, ids, "drive", true)
      for (let i = 0; i < 40 && call.status === "pending"; i++) await this.#advance(POLL)
      this.#checkCalls()
      if (call.status !== "ok")
        this.#out.violate(`drive of ${first.rid} ended ${call.status} ${String(call.error)}`)
    }
    for (const t of await this.#ops.list())
      if (t.row.status !== "completed")
        this.#out.violate(`${t.row.request_id} ends ${t.row.status} after its drive`)
    this.#checkEnd()
  }

  #waiting(c: Call): boolean {
    return c.status === "pending" && c.worker.alive
  }

  #checkEnd(): void {
    const ok = this.#calls.filter((c) => c.status === "ok").length
    const failed = this.#calls.filter((c) => c.status === "error").length
    const abandoned = this.#calls.filter((c) => c.status === "pending" && !c.worker.alive).length
    if (ok + failed + abandoned !== this.#calls.length)
      this.#out.violate(`calls ${this.#calls.length} != ok ${ok} + failed ${failed} + abandoned ${abandoned}`)
    const ran = this.#calls.filter((c) => c.attempt).length
    if (ran !== this.#attempts.length)
      this.#out.violate(`runs ${this.#attempts.length} != calls that ran ${ran}`)
    const replays = this.#calls.filter((c) => c.status === "ok" && !c.attempt).length
    if (replays !== this.stats.replays) this.#out.violate(`replays ${replays} != ${this.stats.replays}`)
    // Each run had its own claim; a claim without a run is a caller that gave up, a lost answer or a crash.
    const claimed = [...this.#claims.values()].flat()
    if (claimed.filter((c) => c.attempt).length !== this.#attempts.length)
      this.#out.violate(
        `runs ${this.#attempts.length} != claims that ran ${claimed.filter((c) => c.attempt).length}`,
      )
    this.stats.linkFailures = this.#workers.reduce((n, w) => n + w.link.failures, 0)
    this.#fail()
  }

  // ---- helpers ----------------------------------------------------------------------------------------------

  #pick<T>(xs: readonly T[]): T {
    return pickOne(this.#rand, xs)
  }

  #shuffle<T>(xs: T[]): T[] {
    return shuffled(this.#rand, xs)
  }

  #fail(): void {
    if (!this.violations.length) return
    // The lines that name a request id, attempt or call a violation names, then the last lines.
    const named = new Set(
      this.violations.join(" ").match(/(?:report|import|slow):[^\s,()]+|\bT-\d\b|\b[ac]\d+\b/g),
    )
    throw failedRun("task model run", this.seed, this, named, (l, n) => l.includes(n), 60)
  }
}
