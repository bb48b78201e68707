// One seeded run of the model-based test (model-random.test.ts): workers (ActionLedgers with distinct owners) over
// one store (memory, or a real one from a ModelStoreFactory: model-store.ts) and one SchedulerClock; tool bodies that
// stop at points the scheduler resumes, renews or abandons (a crashed worker) in random order; an operator and a
// reconciler that judge from an independent provider log; and a reference model of which runs and answers may
// happen, checked after every step and at the end. The workers may instead be RemoteLedger clients of one edge app
// (a ModelWorkersFactory: test/edge/model-remote.ts), the operator then acting through the operator routes.
import { seededRandom } from "../../../src/conformance/random.ts"
import {
  ActionLedger,
  argsFingerprint,
  type Clock,
  LedgerAlreadyResolvedError,
  type LedgerEntry,
  type LedgeredToolOptions,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  type LedgerStorage,
  LedgerWorkerAliveError,
  leaseLapsed,
  type MarkWorkerDeadOptions,
  MyceliumError,
  ReconcileResult,
  type ReleaseOptions,
  resolvedOutcome,
  type TransitionContext,
  transitionKey,
} from "../../../src/core/index.ts"
import { countError, failedRun, pickOne, RunLog, shuffled, untyped } from "../model-kit.ts"
import { SchedulerClock, skewed } from "./model-clock.ts"
import { InFlight, MidCallTime, type ModelStore, type ModelStoreFactory, memoryStore } from "./model-store.ts"

const LEASE = 10
const POLL = 1
const POLL_TIMEOUT = 120
/** The ledger's default `presumedDeadAfter`: 2 × leaseTtl. */
const PRESUMED_DEAD = 2 * LEASE

export type ToolName = "pay" | "charge" | "upsert" | "wire" | "search"
export type Cls = "non_idempotent_mutate" | "keyed_mutate" | "idempotent_mutate" | "irreversible" | "read"
const TOOLS: readonly ToolName[] = ["pay", "charge", "upsert", "wire", "search"]
/** The class each tool's binding resolves to; `pay` declares the legacy alias `payment`. */
export const CLASS: Record<ToolName, Cls> = {
  pay: "non_idempotent_mutate",
  charge: "keyed_mutate",
  upsert: "idempotent_mutate",
  wire: "irreversible",
  search: "read",
}

export interface Args {
  key: string
  amount: number
}
export type Result = Readonly<Record<string, string | number>>

/** What a body sees: ActionLedger's context, or RemoteLedger's, which has no `entry` (the row stays on the server). */
export type ModelTx = Omit<TransitionContext, "entry"> & { readonly entry?: LedgerEntry }
export type ModelTool = (args: Args, meta: { toolCallId: string }) => Promise<Result>
/** A worker's ledger: ActionLedger, or a RemoteLedger (its tool() is ActionLedger's, over HTTP). */
export interface ModelLedger {
  tool(options: LedgeredToolOptions, fn: (args: Args, tx: ModelTx) => Promise<Result>): ModelTool
}
/** The operator's acts, as ActionLedger has them (or a client of the operator routes). */
export interface ModelOperator {
  listTransitions(options: { stuck: true }): Promise<LedgerEntry[]>
  markWorkerDeadFor(requestId: string, options: MarkWorkerDeadOptions): Promise<unknown>
  release(requestId: string, options: ReleaseOptions): Promise<unknown>
}

/** What a run gives workers that reach its store some other way than an in-process ActionLedger. */
export interface ModelWorkersSetup {
  /** The run's seed: a hostile client's own PRNG starts from it. */
  readonly seed: number
  readonly clock: SchedulerClock
  /** A client of the run's store, its calls counted in flight. */
  readonly storage: LedgerStorage
  /** Counts what the store does not see (a request to a server) in flight, so a step waits for it. */
  readonly inFlight: InFlight
  readonly reclaimRequiresDeathSignal: boolean
  readonly leaseTtl: number
  readonly pollInterval: number
  readonly pollTimeout: number
  readonly presumedDeadAfter: number
}
export interface ModelWorkers {
  /** `clock`: the worker's own, the model's or skewed from it (ModelOptions.skew). */
  ledger(worker: string, clock: Clock): ModelLedger
  readonly operator: ModelOperator
  /** The lease the server last answered this holder of `requestId` at `fence` (a claim's, a renewal's). */
  granted?(requestId: string, fence: number): number | null | undefined
  /** Hostile clients of the same server (test/edge/model-intruder.ts): they act after honest steps. */
  readonly intruder?: ModelIntruder
}

/** An honest call as an intruder may learn it: what the agent sent, and the id the server keys it by. */
export interface SeenCall {
  readonly tool: ToolName
  readonly args: Args
  readonly ticket: string
  readonly rid: string
}

/** What an intruder sees of a run, and how it tells the world what it did. */
export interface IntruderView {
  readonly calls: readonly SeenCall[]
  /** The checker's client of the store. */
  readonly store: LedgerStorage
  log(line: string): void
  violate(what: string): void
  /** Other arguments or another binding went out under this tool's ticket: an honest call under it may be refused. */
  taint(tool: string, ticket: string): void
  /** A row the intruder's own begin may have made: no honest call names it. */
  foreign(rid: string): void
}

export interface ModelIntruder {
  attach(view: IntruderView): void
  /** Called after every honest step, the world quiet: acts (or not) by its own PRNG, never the world's. */
  act(): Promise<void>
}
export type ModelWorkersFactory = (setup: ModelWorkersSetup) => ModelWorkers

/** What a run adds to the plain model; without any, a seed repeats the run it always ran. */
export interface ModelOptions {
  /** Time passes inside the workers' store calls (and the edge app's): model-store.ts, MidCallTime. */
  readonly midCall?: boolean
  /**
   * Each worker's clock is off the model's by a random amount of this kind: the store or the server keeps the
   * model's time. Only where the store decides leases on its own clock (HttpLedgerStorage, the edge API).
   */
  readonly skew?: "minutes-hours" | "behind"
}

/** Worker clock offsets: minutes to hours either way, or behind only; one worker in four keeps the model's time. */
function skewOf(kind: NonNullable<ModelOptions["skew"]>, rand: () => number): number {
  if (rand() < 0.25) return 0
  const hours = rand() < 0.5
  const size = hours ? 3600 * (1 + rand() * 5) : 60 * (1 + rand() * 50)
  return kind === "behind" || rand() < 0.5 ? -size : size
}

/** What a body throws on purpose; the caller must get this very object back. */
class ToolFailure extends Error {
  override readonly name = "ToolFailure"
}

type Point = "start" | "pre_charge" | "post_charge" | "after"
type Command = "go" | "renew"
type Ending = "returned" | "threw_before" | "threw_inside" | "threw_after" | "threw_ledger"

interface Plan {
  readonly throwAt: "before" | "inside" | "after" | null
  readonly refBefore: boolean
  readonly refAfter: boolean
}

interface Attempt {
  readonly n: number
  readonly call: Call
  readonly rid: string
  readonly fence: number
  readonly owner: string
  readonly tx: ModelTx
  readonly plan: Plan
  readonly startSeq: number
  leaseUntil: number
  heartbeat: number
  point: Point | null
  resume: ((c: Command) => void) | null
  state: "running" | "crashed" | "done"
  ending: Ending | null
  thrown: unknown
  enteredFn: boolean
  charged: string | null
}

interface Call {
  readonly n: number
  readonly rid: string
  readonly worker: Worker
  readonly tool: ToolName
  readonly args: Args
  readonly ticket: string
  readonly kind: string
  /** Its arguments differ from the first call's under its ticket (or, for `charge`, its business key). */
  readonly drifted: boolean
  readonly drive: boolean
  status: "pending" | "ok" | "error"
  value: unknown
  error: unknown
  attempt: Attempt | null
  checked: boolean
}

interface Worker {
  readonly name: string
  readonly operator: ModelOperator
  readonly tools: Record<ToolName, (args: Args, meta: { toolCallId: string }) => Promise<Result>>
}

interface Licence {
  readonly seq: number
  /** A reconciler's verdict is acted on within the step that asked it; an operator's waits for a redispatch. */
  readonly step: number | null
  used: boolean
}

export interface ModelStats {
  steps: number
  calls: number
  runs: number
  replays: number
  effects: number
  crashes: number
  releases: number
  deathMarks: number
  verdictReruns: number
  /** ModelOptions.midCall: the times the clock moved inside a store call, and the leases that lapsed then. */
  midCallMoves: number
  lapsesMidCall: number
  /** Effects entered on a lease that lapsed after the boundary write's answer: not knowable (#enteredFn). */
  lapsedBeforeEffect: number
  maxPending: number
  errors: Record<string, number>
}

/**
 * The request id a call must get, from the docs (docs/ledger.md, Identity): `charge` names its business key, the
 * others hash their transition key (no scope here; the tool-call id is the dispatch id).
 */
const ridOf = (tool: ToolName, ticket: string, a: Args): string =>
  tool === "charge"
    ? `charge:key:${a.key}`
    : transitionKey({
        tool,
        binding: { agentId: "model", policyVersion: "1", sideEffectClass: CLASS[tool] },
        argsFingerprint: argsFingerprint({ ...a }),
        dispatchId: ticket,
      })
/** A renewal refused because the lease lapsed: RemoteLedger has no class for it, only its code (docs/http-api.md). */
const leaseRefused = (e: unknown): boolean =>
  e instanceof LedgerLeaseError || (e instanceof MyceliumError && e.code === "ledger_lease_expired")
/**
 * Deep equality of the JSON values rows and answers hold. Not node:util's isDeepStrictEqual: the model also runs in
 * workerd and Chromium (test/workers, test/browser), and a row that crossed RPC or a structured clone is a copy.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const x = a as Record<string, unknown>
  const y = b as Record<string, unknown>
  const keys = Object.keys(x)
  return (
    keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && sameValue(x[k], y[k]))
  )
}
const argsText = (a: Args): string => `${a.key}/${a.amount}`
const short = (rid: string): string => (rid.includes(":") ? rid : rid.slice(0, 8))

export class ModelWorld {
  readonly seed: number
  readonly #rand: () => number
  readonly clock = new SchedulerClock()
  readonly #opened: ModelStore
  readonly #inFlight = new InFlight()
  /** The checker's own client of the store. */
  readonly store: LedgerStorage
  readonly #out = new RunLog()
  readonly trace = this.#out.trace
  readonly violations = this.#out.violations
  readonly stats: ModelStats = {
    steps: 0,
    calls: 0,
    runs: 0,
    replays: 0,
    effects: 0,
    crashes: 0,
    releases: 0,
    deathMarks: 0,
    verdictReruns: 0,
    midCallMoves: 0,
    lapsesMidCall: 0,
    lapsedBeforeEffect: 0,
    maxPending: 0,
    errors: {},
  }
  readonly #workers: Worker[] = []
  readonly #calls: Call[] = []
  readonly #attempts: Attempt[] = []
  readonly #byArgs = new WeakMap<object, Call>()
  /** The provider's own log: the refs of every charge it made, per request id. Never read from the ledger. */
  readonly #effects = new Map<string, string[]>()
  readonly #reads = new Map<string, number>()
  readonly #licences = new Map<string, Licence[]>()
  /** request id → the first call of it that did not drift. */
  readonly #firstCall = new Map<string, Call>()
  /** ticket → the argument texts sent under it; charge key → the argument texts sent for it. */
  readonly #ticketArgs = new Map<string, string[]>()
  readonly #keyArgs = new Map<string, string[]>()
  readonly #completed = new Map<string, unknown>()
  readonly #fences = new Map<string, number>()
  readonly #midCall: MidCallTime | null
  readonly #edge: ModelWorkers | undefined
  #seq = 0
  #tickets = 0
  readonly #intruder: ModelIntruder | null
  /** `tool|ticket` an intruder sent other arguments or another binding under; rows its begins may have made. */
  readonly #tainted = new Set<string>()
  readonly #foreign = new Set<string>()

  constructor(
    seed: number,
    store: ModelStoreFactory = memoryStore,
    remote?: ModelWorkersFactory,
    options: ModelOptions = {},
  ) {
    this.seed = seed
    this.#opened = store(this.clock)
    // The checker's reads stay outside time: they are not the system's.
    this.store = this.#inFlight.wrap(this.#opened.client())
    this.#rand = seededRandom(seed)
    // Amounts around a poll, a renewal interval, the lease and the death presumption, so a lease can lapse between
    // a holder's read and its write, between its effect and its boundary write, and during a renewal.
    this.#midCall = options.midCall
      ? new MidCallTime(this.clock, seed, {
          chance: 0.06,
          amounts: [POLL, LEASE / 3, LEASE / 2, LEASE, 1.5 * LEASE, PRESUMED_DEAD],
          moved: (from, to, what) => this.#movedMidCall(from, to, what),
        })
      : null
    // Its own generator, so the offsets leave the run's own draws as they were.
    const skewRand = seededRandom(seed ^ 0x2545f491)
    const kind = options.skew
    const skews = kind ? Array.from({ length: 4 }, () => skewOf(kind, skewRand)) : []
    const clockOf = (i: number): Clock => (skews[i] ? skewed(this.clock, skews[i]) : this.clock)
    const client = (): LedgerStorage => {
      const c = this.#opened.client()
      return this.#inFlight.wrap(this.#midCall ? this.#midCall.wrap(c) : c)
    }
    // The edge app takes no reconciler: its blocked rows wait for the operator.
    const withReconciler = this.#rand() < 0.5 && !remote
    const reclaimRequiresDeathSignal = this.#rand() < 0.3
    const workers = 2 + Math.floor(this.#rand() * 3)
    this.#out.log(
      `world: ${workers} workers, reconciler ${withReconciler}, reclaimRequiresDeathSignal ${reclaimRequiresDeathSignal}${remote ? ", over the edge API" : ""}` +
        `${this.#midCall ? ", time passes inside store calls" : ""}${skews.length ? `, clock skews ${skews.slice(0, workers).join(" ")}` : ""}`,
    )
    const edge = remote?.({
      seed,
      clock: this.clock,
      storage: client(),
      inFlight: this.#inFlight,
      reclaimRequiresDeathSignal,
      leaseTtl: LEASE,
      pollInterval: POLL,
      pollTimeout: POLL_TIMEOUT,
      presumedDeadAfter: PRESUMED_DEAD,
    })
    this.#edge = edge
    // Workers on skewed clocks answer to an operator whose clock is right (the server's): an operator's own skew
    // would judge every lease by it, which docs/http-api.md leaves to keeping that clock synchronized.
    const ops =
      skews.length && !edge
        ? new ActionLedger({
            storage: client(),
            clock: this.clock,
            owner: "ops",
            leaseTtl: LEASE,
            reclaimRequiresDeathSignal,
            onWarning: () => {},
          })
        : null
    for (let i = 0; i < workers; i++) {
      const name = `w${i}`
      const local = edge
        ? null
        : new ActionLedger({
            storage: client(),
            clock: clockOf(i),
            owner: name,
            leaseTtl: LEASE,
            // Renewals are the scheduler's steps (a body's renewLease()), not timers: a run must repeat from its seed.
            leaseRenewInterval: 0,
            pollInterval: POLL,
            pollTimeout: POLL_TIMEOUT,
            reclaimRequiresDeathSignal,
            ...(withReconciler ? { reconciler: { reconcile: (e: LedgerEntry) => this.#reconcile(e) } } : {}),
            onWarning: () => {},
          })
      const tools = {} as Worker["tools"]
      for (const tool of TOOLS) {
        const binding = {
          agentId: "model",
          policyVersion: "1",
          sideEffectClass: tool === "pay" ? "payment" : CLASS[tool],
          ...(tool === "charge" ? { requestIdFrom: "key" } : {}),
        } as const
        const ledger: ModelLedger = local ?? (edge as ModelWorkers).ledger(name, clockOf(i))
        tools[tool] = ledger.tool({ name: tool, binding }, (args: Args, tx) =>
          this.#body(name, tool, args, tx),
        )
      }
      this.#workers.push({ name, operator: ops ?? local ?? (edge as ModelWorkers).operator, tools })
    }
    this.#intruder = edge?.intruder ?? null
    this.#intruder?.attach({
      calls: this.#calls,
      store: this.store,
      log: (line) => this.#out.log(`x ${line}`),
      violate: (what) => this.#out.violate(`intruder: ${what}`),
      taint: (tool, ticket) => this.#tainted.add(`${tool}|${ticket}`),
      foreign: (rid) => this.#foreign.add(rid),
    })
  }

  // ---- the run ----------------------------------------------------------------------------------------------

  async run(steps: number): Promise<void> {
    try {
      for (this.#out.step = 1; this.#out.step <= steps; this.#out.step++) {
        await this.#randomStep()
        // The store answers every call this step set off before time moves on (memory has by the next turn).
        await this.#inFlight.quiet()
        if (this.#intruder) {
          await this.#intruder.act()
          await this.#inFlight.quiet()
        }
        await this.#checkStep()
        this.#fail()
      }
      this.stats.steps = steps
      await this.#finish()
      this.#fail()
    } finally {
      await this.#opened.close?.()
    }
  }

  async #randomStep(): Promise<void> {
    const r = this.#rand()
    const resumable = this.#attempts.filter((a) => a.resume)
    if (r < 0.3 || this.#calls.length === 0) return this.#startRandomCall()
    if (r < 0.58 && resumable.length) return this.#resume(this.#pick(resumable), "go")
    if (r < 0.63 && resumable.length) return this.#resume(this.#pick(resumable), "renew")
    if (r < 0.69 && resumable.length) return this.#crash(this.#pick(resumable))
    if (r < 0.88) {
      const big = this.#rand() < 0.3
      const dt = big ? LEASE * (1 + this.#rand() * 1.5) : 0.5 + this.#rand() * 2.5
      const woke = this.clock.advance(dt, (xs) => this.#shuffle(xs))
      this.#out.log(`clock +${dt.toFixed(1)}s (woke ${woke})`)
      return
    }
    return this.#operatorStep()
  }

  #startRandomCall(): void {
    const worker = this.#pick(this.#workers)
    const earlier = this.#calls.filter((c) => !c.drive)
    const r = this.#rand()
    if (!earlier.length || r < 0.4) {
      this.#start(worker, this.#pick(TOOLS), this.#randomArgs(), `call_${this.#tickets++}`, "fresh")
      return
    }
    const prior = this.#pick(earlier)
    if (r < 0.7) this.#start(worker, prior.tool, { ...prior.args }, prior.ticket, "redispatch")
    else if (r < 0.85) this.#start(worker, prior.tool, { ...prior.args }, `call_${this.#tickets++}`, "new-id")
    else {
      const drifted = { ...prior.args, amount: prior.args.amount + 1 + Math.floor(this.#rand() * 2) }
      this.#start(worker, prior.tool, drifted, prior.ticket, "drift")
    }
  }

  #randomArgs(): Args {
    return { key: `k${1 + Math.floor(this.#rand() * 3)}`, amount: 1 + Math.floor(this.#rand() * 3) }
  }

  #start(worker: Worker, tool: ToolName, args: Args, ticket: string, kind: string, drive = false): Call {
    const text = argsText(args)
    // The first arguments sent for a request id are the call's; other arguments for it are drift. (`charge` is
    // named by its business key, which spans tickets: under another ticket it is the same call.)
    const sent = (sets: Map<string, string[]>, key: string): string | undefined => {
      const list = sets.get(key) ?? []
      if (!list.includes(text)) list.push(text)
      sets.set(key, list)
      return list[0]
    }
    const firstUnderTicket = sent(this.#ticketArgs, `${tool}|${ticket}`)
    const firstUnderKey = tool === "charge" ? sent(this.#keyArgs, args.key) : undefined
    const drifted = (tool === "charge" ? firstUnderKey : firstUnderTicket) !== text
    const call: Call = {
      n: this.#calls.length,
      rid: ridOf(tool, ticket, args),
      worker,
      tool,
      args,
      ticket,
      kind,
      drifted,
      drive,
      status: "pending",
      value: undefined,
      error: undefined,
      attempt: null,
      checked: false,
    }
    this.#calls.push(call)
    this.stats.calls++
    this.#byArgs.set(args, call)
    if (!this.#firstCall.has(call.rid) && !drifted) this.#firstCall.set(call.rid, call)
    this.#out.log(
      `c${call.n} ${worker.name} ${kind} ${tool}(${text}) ${ticket}${drifted ? " [drifted]" : ""}`,
    )
    worker.tools[tool](args, { toolCallId: ticket }).then(
      (value) => {
        call.status = "ok"
        call.value = value
        this.#out.log(`c${call.n} ok ${JSON.stringify(value)}${call.attempt ? "" : " (replay)"}`)
        if (!call.attempt) this.stats.replays++
      },
      (error: unknown) => {
        call.status = "error"
        call.error = error
        const name = countError(this.stats.errors, error)
        this.#out.log(
          `c${call.n} error ${name}: ${error instanceof Error ? error.message.slice(0, 120) : ""}`,
        )
      },
    )
    const pending = this.#calls.filter((c) => c.status === "pending").length
    this.stats.maxPending = Math.max(this.stats.maxPending, pending)
    return call
  }

  // ---- the tool bodies ----------------------------------------------------------------------------------------

  async #body(owner: string, tool: ToolName, args: Args, tx: ModelTx): Promise<Result> {
    const a = this.#begin(owner, tool, args, tx)
    try {
      if (!tx.entry || this.#opened.serverLeases) await this.#leaseFromRow(a)
      await this.#stop(a, "start")
      if (a.plan.throwAt === "before") {
        throw this.#failure(a, "threw_before", `before the effect (a${a.n})`)
      }
      if (tool === "search") {
        const run = (this.#reads.get(a.rid) ?? 0) + 1
        this.#reads.set(a.rid, run)
        await this.#stop(a, "after")
        if (a.plan.throwAt) {
          throw this.#failure(a, "threw_after", `after the read (a${a.n})`)
        }
        a.ending = "returned"
        return { read: args.key, run }
      }
      if (a.plan.refBefore) await tx.recordExternalOperation(`key:${a.rid}`)
      const ref = await tx.sideEffect(async () => {
        this.#enteredFn(a)
        await this.#stop(a, "pre_charge")
        const ref = this.#charge(a)
        await this.#stop(a, "post_charge")
        if (a.plan.throwAt === "inside") {
          throw this.#failure(a, "threw_inside", `inside the effect (a${a.n})`)
        }
        return ref
      })
      if (a.plan.refAfter) await tx.recordExternalOperation(ref)
      await this.#stop(a, "after")
      if (a.plan.throwAt === "after") {
        throw this.#failure(a, "threw_after", `after the effect (a${a.n})`)
      }
      a.ending = "returned"
      return { ref }
    } catch (e) {
      // A ledger refusal inside the body (a late owner's boundary write): the caller gets it unchanged.
      if (!a.ending) {
        a.ending = "threw_ledger"
        this.#typed(e, `a${a.n} body`)
      }
      throw e
    } finally {
      if (a.state === "running") a.state = "done"
    }
  }

  #begin(owner: string, tool: ToolName, args: Args, tx: ModelTx): Attempt {
    const call = this.#byArgs.get(args)
    if (!call) throw new Error("a body ran with arguments no call passed")
    if (call.attempt) this.#out.violate(`c${call.n} ran its body twice`)
    if (call.drifted) this.#out.violate(`c${call.n} has drifted arguments, yet its body ran`)
    const rid = tx.requestId
    if (rid !== call.rid)
      this.#out.violate(`c${call.n} ran under ${short(rid)}, its identity is ${short(call.rid)}`)
    // An earlier attempt's boundary answer says nothing of this one's.
    this.#midCall?.boundaryAnswered.delete(rid)
    const r = this.#rand()
    const plan: Plan = {
      throwAt: call.drive ? null : r < 0.1 ? "before" : r < 0.2 ? "inside" : r < 0.3 ? "after" : null,
      refBefore: this.#rand() < 0.3,
      refAfter: this.#rand() < 0.4,
    }
    const prior = this.#attemptsOf(rid).at(-1)
    const a: Attempt = {
      n: this.#attempts.length,
      call,
      rid,
      fence: tx.fence,
      owner,
      tx,
      plan,
      startSeq: ++this.#seq,
      // Through the edge API, the lease the server's answer gave (#leaseFromRow reads the row too).
      leaseUntil: tx.entry?.leaseUntil ?? this.#edge?.granted?.(rid, tx.fence) ?? Infinity,
      heartbeat: tx.entry?.lastHeartbeatAt ?? this.clock.now(),
      point: null,
      resume: null,
      state: "running",
      ending: null,
      thrown: undefined,
      enteredFn: false,
      charged: null,
    }
    call.attempt = a
    this.#attempts.push(a)
    this.stats.runs++
    this.#out.log(
      `a${a.n} c${call.n} ${owner} runs ${tool} ${short(rid)} fence ${tx.fence} plan ${plan.throwAt ?? "ok"}${plan.refBefore ? " ref-before" : ""}${plan.refAfter ? " ref-after" : ""}`,
    )
    if (prior) this.#checkRerun(a, prior, CLASS[tool])
    return a
  }

  /**
   * The reference model of a second run: the holder before must be finished or its lease lapsed, and unless the
   * docs' table lets the class run again after what that holder did, a `not_executed` verdict given since it started
   * must license this run (one verdict, one run).
   */
  #checkRerun(a: Attempt, prev: Attempt, cls: Cls): void {
    const now = this.clock.now()
    if (prev.state !== "done" && now < prev.leaseUntil)
      this.#out.violate(
        `a${a.n} took ${short(a.rid)} over from a${prev.n}, whose lease runs until ${prev.leaseUntil} > ${now}`,
      )
    const free =
      cls === "read" ||
      (cls === "idempotent_mutate" && !prev.enteredFn) ||
      // A run that failed before its effect (its own throw, or its boundary write refused) and said so.
      (cls === "keyed_mutate" && !prev.enteredFn && prev.state === "done" && prev.ending !== "returned")
    if (free) return
    const licence = (this.#licences.get(a.rid) ?? []).find(
      (l) => !l.used && l.seq > prev.startSeq && (l.step === null || l.step === this.#out.step),
    )
    if (!licence) {
      this.#out.violate(
        `a${a.n} re-ran ${cls} ${short(a.rid)} after a${prev.n} (${prev.ending ?? prev.state}, effect boundary ${prev.enteredFn ? "crossed" : "not crossed"}) without a not_executed verdict`,
      )
      return
    }
    licence.used = true
    this.stats.verdictReruns++
  }

  /** What a body throws on purpose, remembered so the caller's error can be checked to be this very object. */
  #failure(a: Attempt, ending: Ending, what: string): ToolFailure {
    a.ending = ending
    a.thrown = new ToolFailure(what)
    return a.thrown as ToolFailure
  }

  #enteredFn(a: Attempt): void {
    a.enteredFn = true
    const latest = this.#attemptsOf(a.rid).at(-1)
    if (latest !== a)
      this.#out.violate(`a${a.n} entered its effect after a${latest?.n} took ${short(a.rid)} over`)
    // With time passing inside store calls, the lease is judged when the boundary write's answer reached the ledger
    // (through the edge API, the server's ledger). Time that passes after that and before fn runs (here: other calls'
    // store time in between; in life a pause, or the way back to a RemoteLedger client, which has no server clock)
    // is not knowable to whoever decides to run fn. Without it no time passes inside a step: the two are the same.
    const at = this.#midCall?.boundaryAnswered.get(a.rid) ?? this.clock.now()
    if (at >= a.leaseUntil) this.#out.violate(`a${a.n} crossed the boundary on a lapsed lease`)
    else if (this.clock.now() >= a.leaseUntil) {
      this.stats.lapsedBeforeEffect++
      this.#out.log(`a${a.n} enters its effect on a lease that lapsed after the boundary write was answered`)
    }
  }

  #charge(a: Attempt): string {
    const refs = this.#effects.get(a.rid) ?? []
    const ref = `${short(a.rid)}#${refs.length + 1}`
    refs.push(ref)
    this.#effects.set(a.rid, refs)
    a.charged = ref
    this.stats.effects++
    this.#out.log(`a${a.n} EFFECT ${ref}`)
    // The promise itself: with a truthful operator and reconciler, one effect per request id, ever.
    if (refs.length > 1)
      this.#out.violate(`${CLASS[a.call.tool]} ${short(a.rid)} took effect ${refs.length} times`)
    return ref
  }

  /** A point where the body waits for the scheduler: go on, renew the lease and wait again, or never (crashed). */
  async #stop(a: Attempt, point: Point): Promise<void> {
    for (;;) {
      const command = await new Promise<Command>((resume) => {
        a.point = point
        a.resume = resume
      })
      a.resume = null
      if (command === "go") return
      try {
        await a.tx.renewLease()
        if (a.tx.entry && !this.#opened.serverLeases) {
          a.leaseUntil = a.tx.entry.leaseUntil ?? Infinity
          a.heartbeat = a.tx.entry.lastHeartbeatAt ?? a.heartbeat
        } else await this.#leaseFromRow(a)
        this.#out.log(`a${a.n} renewed to ${a.leaseUntil}`)
      } catch (e) {
        this.#typed(e, `a${a.n} renewal`)
        if (!(leaseRefused(e) || e instanceof LedgerOutcomeAlreadySetError))
          this.#out.violate(`a${a.n} renewal failed with ${String(e)}`)
        this.#out.log(`a${a.n} renewal refused: ${(e as Error).name}`)
      }
    }
  }

  /**
   * RemoteLedger's context holds no row, and HttpLedgerStorage's holder keeps its own stamps (ModelStore.serverLeases):
   * the lease its claim or renewal set is what the row says (the server's clock is the model's), read as soon as the call holds it, before
   * anything else can move the row.
   */
  async #leaseFromRow(a: Attempt): Promise<void> {
    const row = await this.store.get(a.rid)
    const granted = this.#edge?.granted?.(a.rid, a.fence)
    // Time passed inside the call that granted the lease (a claim, a renewal) until it lapsed, before this body saw
    // the answer: another worker may have taken the row over, or blocked it, as it may any lapsed lease.
    const lapsedInCall = this.#midCall && typeof granted === "number" && this.clock.now() >= granted
    if (lapsedInCall && row && (row.fence > a.fence || row.terminalOutcome !== "IN_FLIGHT")) {
      a.leaseUntil = granted
      this.#out.log(
        `a${a.n} sees ${short(a.rid)} moved on (${row.terminalOutcome} ${row.fence}): its lease lapsed in the call`,
      )
      return
    }
    if (row?.fence !== a.fence || row.terminalOutcome !== "IN_FLIGHT") {
      this.#out.violate(
        `a${a.n} holds ${short(a.rid)} at fence ${a.fence}; the row: ${row?.terminalOutcome} ${row?.fence}`,
      )
      return
    }
    a.leaseUntil = row.leaseUntil ?? Infinity
    a.heartbeat = row.lastHeartbeatAt ?? a.heartbeat
  }

  /** Time moved inside a store call: the leases (as the model knows them) of running attempts it lapsed. */
  #movedMidCall(from: number, to: number, what: string): void {
    this.stats.midCallMoves++
    const lapsed = this.#attempts.filter(
      (a) => a.state === "running" && from < a.leaseUntil && a.leaseUntil <= to,
    )
    this.stats.lapsesMidCall += lapsed.length
    this.#out.log(`${what}${lapsed.length ? `; lapsed ${lapsed.map((a) => `a${a.n}`).join(" ")}` : ""}`)
  }

  // ---- scheduler actions --------------------------------------------------------------------------------------

  async #resume(a: Attempt, command: Command): Promise<void> {
    const resume = a.resume
    if (!resume) return
    // Inside sideEffect(), before the provider is called, only the death signal stands between a stalled owner that
    // wakes and a second charge (docs/kill-safety.md, "what remains"). Heartbeat silence past presumedDeadAfter is
    // the contract's presumption of death, so a worker silent that long stays dead; a shorter stall may wake.
    if (command === "go" && a.point === "pre_charge" && this.clock.now() - a.heartbeat >= PRESUMED_DEAD)
      return this.#crash(a)
    this.#out.log(`a${a.n} ${command} at ${a.point}`)
    resume(command)
  }

  #crash(a: Attempt): void {
    a.resume = null
    a.state = "crashed"
    this.stats.crashes++
    this.#out.log(`a${a.n} CRASHED at ${a.point}`)
  }

  /** No attempt at this id can act again: each finished or crashed. What an operator confirms before its verdict. */
  #allDead(rid: string): boolean {
    return this.#attemptsOf(rid).every((a) => a.state !== "running")
  }

  async #operatorStep(): Promise<void> {
    const stuck = await this.#pick(this.#workers).operator.listTransitions({ stuck: true })
    if (!stuck.length) return
    const row = this.#pick(stuck)
    if (this.#rand() < 0.4) await this.#markDead(row, this.#allDead(row.requestId) && this.#rand() < 0.7)
    else await this.#release(row, this.#allDead(row.requestId) && this.#rand() < 0.5)
  }

  /** `assert`: the operator knows every attempt is over. Without it the ledger's heartbeat rule decides. */
  async #markDead(row: LedgerEntry, assert: boolean): Promise<void> {
    const rid = row.requestId
    try {
      await this.#workers[0]?.operator.markWorkerDeadFor(rid, {
        by: "ops",
        reason: "model: worker gone",
        overrideHeartbeat: assert,
        ...(this.#rand() < 0.5 ? { expectedFence: row.fence } : {}),
      })
      this.stats.deathMarks++
      this.#out.log(`op marked ${short(rid)} dead${assert ? " (override)" : ""}`)
    } catch (e) {
      this.#operatorError(e, `mark ${short(rid)} dead`)
    }
  }

  /** Death first, then the provider's record: `completed` with its ref if it charged, else `not_executed`. */
  async #release(row: LedgerEntry, assert: boolean): Promise<boolean> {
    const rid = row.requestId
    const refs = this.#effects.get(rid) ?? []
    const verdict =
      refs.length > 0
        ? ({ verified: "completed", result: { ref: refs[0] as string } } as const)
        : ({ verified: "not_executed" } as const)
    try {
      await this.#workers[0]?.operator.release(rid, {
        ...verdict,
        by: "ops",
        reason: "model: provider log",
        ...(assert ? { overrideDeathSignal: "model: every attempt crashed or finished" } : {}),
        ...(this.#rand() < 0.5 ? { expectedFence: row.fence } : {}),
      })
      this.stats.releases++
      if (verdict.verified === "not_executed") this.#licence(rid, null)
      this.#out.log(`op released ${short(rid)} ${verdict.verified}${assert ? " (death override)" : ""}`)
      return true
    } catch (e) {
      this.#operatorError(e, `release ${short(rid)}`)
      return false
    }
  }

  #operatorError(e: unknown, what: string): void {
    this.#typed(e, what)
    if (
      !(
        e instanceof LedgerReleaseRefusedError ||
        e instanceof LedgerAlreadyResolvedError ||
        e instanceof LedgerWorkerAliveError ||
        e instanceof LedgerOutcomeAlreadySetError
      )
    )
      this.#out.violate(`${what} failed with ${String(e)}`)
    this.#out.log(`op ${what} refused: ${(e as Error).name}`)
  }

  /** A truthful reconciler: the provider's log. Sometimes it cannot tell, or fails. */
  #reconcile(entry: LedgerEntry): ReconcileResult {
    const r = this.#rand()
    if (r < 0.05) throw new Error("provider unreachable")
    if (r < 0.15) return ReconcileResult.unknown()
    const refs = this.#effects.get(entry.requestId) ?? []
    this.#out.log(`reconciler on ${short(entry.requestId)}: ${refs.length ? "completed" : "not executed"}`)
    if (refs.length) return ReconcileResult.completed({ ref: refs[0] as string })
    this.#licence(entry.requestId, this.#out.step)
    return ReconcileResult.notExecuted()
  }

  #licence(rid: string, step: number | null): void {
    const list = this.#licences.get(rid) ?? []
    list.push({ seq: ++this.#seq, step, used: false })
    this.#licences.set(rid, list)
  }

  // ---- invariants ---------------------------------------------------------------------------------------------

  async #checkStep(): Promise<void> {
    for (const row of await this.#rows()) {
      const rid = row.requestId
      const fence = this.#fences.get(rid) ?? 0
      if (row.fence < fence) this.#out.violate(`${short(rid)} fence went back from ${fence} to ${row.fence}`)
      this.#fences.set(rid, row.fence)
      const done = this.#completed.get(rid)
      if (done !== undefined) {
        if (row.terminalOutcome !== "COMPLETED" || !sameValue(row.result, done))
          this.#out.violate(
            `${short(rid)} was COMPLETED and changed to ${row.terminalOutcome} ${JSON.stringify(row.result)}`,
          )
      } else if (row.terminalOutcome === "COMPLETED") this.#completed.set(rid, row.result)
    }
    for (const call of this.#calls) {
      if (call.status === "pending" || call.checked) continue
      call.checked = true
      this.#checkAnswer(call)
    }
  }

  /**
   * Every row: by list(), or where the store asks (`byId`), each id a call named, read at once: a list() of Redis
   * scans the whole shared keyspace (80 ms a step on Upstash). #checkEnd lists, and finds a row under any other id.
   */
  async #rows(): Promise<LedgerEntry[]> {
    if (!this.#opened.byId) {
      const all: LedgerEntry[] = []
      for await (const row of this.store.list()) all.push(row)
      return all
    }
    const rids = [...new Set(this.#calls.map((c) => c.rid))]
    const rows = await Promise.all(rids.map((rid) => this.store.get(rid)))
    return rows.filter((r) => r !== null)
  }

  /** A settled call: a stored result, its own run's result, or a typed refusal it may get. */
  #checkAnswer(call: Call): void {
    if (call.status === "ok") {
      if (call.drifted)
        this.#out.violate(`c${call.n} has drifted arguments, yet got ${JSON.stringify(call.value)}`)
      const stored = this.#completed.get(call.rid)
      if (call.attempt) {
        const own = call.attempt.charged
        if (call.tool !== "search" && !sameValue(call.value, { ref: own }))
          this.#out.violate(`c${call.n} returned ${JSON.stringify(call.value)}, not its run's effect ${own}`)
      } else if (stored === undefined || !sameValue(call.value, stored))
        this.#out.violate(
          `c${call.n} replayed ${JSON.stringify(call.value)}, but the stored result is ${JSON.stringify(stored)}`,
        )
      return
    }
    const e = call.error
    if (e instanceof ToolFailure) {
      if (call.attempt?.thrown !== e)
        this.#out.violate(`c${call.n} got a ToolFailure its own run did not throw`)
      return
    }
    this.#typed(e, `c${call.n}`)
    const conflicted =
      (this.#ticketArgs.get(`${call.tool}|${call.ticket}`)?.length ?? 0) > 1 ||
      this.#tainted.has(`${call.tool}|${call.ticket}`) ||
      (call.tool === "charge" && (this.#keyArgs.get(call.args.key)?.length ?? 0) > 1)
    const allowed =
      e instanceof LedgerHardBlockError ||
      e instanceof LedgerPollTimeoutError ||
      (e instanceof LedgerIdentityConflictError && conflicted) ||
      // A late owner: its boundary write found the row taken over, blocked or released, or its answer came back
      // after the lease lapsed (time passing inside a store call).
      ((e instanceof LedgerOutcomeAlreadySetError || leaseRefused(e)) && call.attempt !== null)
    if (!allowed) this.#out.violate(`c${call.n} (${call.kind}) failed with ${String(e)}`)
    if (call.drifted && !(e instanceof LedgerIdentityConflictError || e instanceof LedgerHardBlockError))
      this.#out.violate(`c${call.n} has drifted arguments and failed with ${String(e)}, not a refusal`)
  }

  /** Every error has one root (MyceliumError) and a snake_case code. */
  #typed(e: unknown, where: string): void {
    const wrong = untyped(e)
    if (wrong) this.#out.violate(`${where}: ${wrong}`)
  }

  // ---- the end: drain, settle, drive every call to its one outcome ----------------------------------------------

  async #finish(): Promise<void> {
    this.#out.log("== drain")
    await this.#pump(() => this.#calls.some((c) => this.#waiting(c)))
    const stranded = this.#calls.filter((c) => this.#waiting(c))
    for (const c of stranded) this.#out.violate(`c${c.n} (${c.kind} ${c.tool}) never settled`)
    await this.#checkStep()
    this.#fail()

    // Every worker finished or died: lapse every lease (and the heartbeat silence), then the operator's pass.
    this.clock.advance(6 * LEASE, (xs) => xs)
    if (this.#midCall) this.#midCall.on = false
    this.#out.log("== operator pass")
    const operator = this.#workers[0]?.operator as ModelOperator
    for (const row of await operator.listTransitions({ stuck: true })) await this.#settle(row)
    for await (const row of this.store.list())
      if (row.terminalOutcome === "IN_FLIGHT")
        this.#out.violate(
          `${short(row.requestId)} stays IN_FLIGHT after every worker ended and the operator's pass`,
        )
    await this.#checkStep()
    this.#fail()

    this.#out.log("== drive")
    for (const first of this.#firstCall.values()) await this.#drive(first)
    await this.#checkStep()
    await this.#checkEnd()
  }

  /** Not settled, and not abandoned with its own crashed run. */
  #waiting(c: Call): boolean {
    return c.status === "pending" && c.attempt?.state !== "crashed"
  }

  /** Resumes every body and moves time on, until `busy()` says all is done (or a bound, which is a failure). */
  async #pump(busy: () => boolean): Promise<void> {
    for (let i = 0; i < 400 && busy(); i++) {
      for (const a of this.#shuffle(this.#attempts.filter((x) => x.resume))) {
        await this.#resume(a, "go")
        await this.#inFlight.quiet()
      }
      this.clock.advance(2 * POLL, (xs) => this.#shuffle(xs))
      await this.#inFlight.quiet()
    }
  }

  async #settle(row: LedgerEntry): Promise<void> {
    const now = this.clock.now()
    if (resolvedOutcome(row, now) === "IN_FLIGHT" || leaseLapsed(row, now)) await this.#markDead(row, true)
    const fresh = await this.store.get(row.requestId)
    if (fresh && fresh.terminalOutcome !== "COMPLETED" && !fresh.operatorResolution)
      await this.#release(fresh, true)
  }

  /** Redispatches the first call of an identity until it answers; a hard block gets the operator's verdict. */
  async #drive(first: Call): Promise<void> {
    const identity = `${first.tool}(${argsText(first.args)}) ${short(first.rid)}`
    for (let i = 0; i < 5; i++) {
      const call = this.#start(
        this.#pick(this.#workers),
        first.tool,
        { ...first.args },
        first.ticket,
        "drive",
        true,
      )
      await this.#inFlight.quiet()
      await this.#pump(() => call.status === "pending")
      await this.#checkStep()
      if (call.status === "ok") return
      if (call.status === "pending") return this.#out.violate(`drive of ${identity} never settled`)
      if (call.error instanceof LedgerIdentityConflictError) return
      if (!(call.error instanceof LedgerHardBlockError)) continue
      const row = await this.store.get(first.rid)
      if (row) await this.#settle(row)
    }
    this.#out.violate(`${identity} could not be driven to an answer in 5 redispatches`)
  }

  async #checkEnd(): Promise<void> {
    const named = new Set(this.#calls.map((c) => c.rid))
    for await (const row of this.store.list()) {
      const rid = row.requestId
      if (row.terminalOutcome === "IN_FLIGHT") this.#out.violate(`${short(rid)} ends IN_FLIGHT`)
      // An intruder's own row: test/edge/model-intruder.ts checks what it holds.
      if (this.#foreign.has(rid) && !named.has(rid)) continue
      if (!named.has(rid)) this.#out.violate(`a row under ${short(rid)}, an id no call named`)
      const refs = this.#effects.get(rid) ?? []
      if (row.tool === "search") continue
      if (
        refs.length > 0 &&
        !(row.terminalOutcome === "COMPLETED" && sameValue(row.result, { ref: refs[0] }))
      )
        this.#out.violate(
          `${short(rid)} charged ${refs.join(",")} but ends ${row.terminalOutcome} ${JSON.stringify(row.result)}`,
        )
      if (row.terminalOutcome === "COMPLETED" && refs.length !== 1)
        this.#out.violate(`${short(rid)} ends COMPLETED with ${refs.length} effects at the provider`)
    }
    // Every identity's answer (its drive's, at least) is the stored one; every ok call of it got the same.
    for (const call of this.#calls) {
      if (call.status !== "ok" || call.tool === "search") continue
      const row = await this.store.get(call.rid)
      if (!row || !sameValue(row.result, call.value))
        this.#out.violate(
          `c${call.n} got ${JSON.stringify(call.value)}, the row holds ${JSON.stringify(row?.result)}`,
        )
    }
    // Counts: every call settled or was abandoned with its crashed run; every run belongs to one call.
    const ok = this.#calls.filter((c) => c.status === "ok").length
    const failed = this.#calls.filter((c) => c.status === "error").length
    const abandoned = this.#calls.filter(
      (c) => c.status === "pending" && c.attempt?.state === "crashed",
    ).length
    if (ok + failed + abandoned !== this.#calls.length)
      this.#out.violate(`calls ${this.#calls.length} != ok ${ok} + failed ${failed} + abandoned ${abandoned}`)
    const owned = this.#calls.filter((c) => c.attempt).length
    if (owned !== this.#attempts.length)
      this.#out.violate(`runs ${this.#attempts.length} != calls that ran ${owned}`)
    const replays = this.#calls.filter((c) => c.status === "ok" && !c.attempt).length
    if (replays !== this.stats.replays) this.#out.violate(`replays ${replays} != ${this.stats.replays}`)
    const charged = this.#attempts.filter((a) => a.charged).length
    if (charged !== this.stats.effects)
      this.#out.violate(`runs that charged ${charged} != effects ${this.stats.effects}`)
    this.#fail()
  }

  // ---- helpers ----------------------------------------------------------------------------------------------

  #attemptsOf(rid: string): Attempt[] {
    return this.#attempts.filter((a) => a.rid === rid)
  }

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
      this.violations.join(" ").match(/\b(a\d+|c\d+|charge:key:k\d|[0-9a-f]{8})\b/g) ?? [],
    )
    throw failedRun("model run", this.seed, this, named, (l, n) => new RegExp(`\\b${n}\\b`).test(l), 80)
  }
}
