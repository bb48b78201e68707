// TaskLedger: once-only whole tasks, row-compatible with the original's task ledger, plus a lease and a fence.

import { blank } from "../blank.ts"
import { InvalidOptionError } from "../errors.ts"
import { throwIfAborted, timerMs } from "../ledger/clock.ts"
import { appendReceipt } from "../ledger/engine/receipts.ts"
import {
  type Clock,
  type JsonValue,
  LedgerConfigError,
  ReceiptAppendError,
  type ReceiptHook,
  type SignedReceipt,
  systemClock,
} from "../ledger/index.ts"
import { errorText } from "../ledger/machine/transitions.ts"
import { argumentsStoredAndKeyed, toJsonValue } from "../ledger/model/canonical.ts"
import type { ToolArgs } from "../ledger/model/tool-arguments.ts"
import { clip, safeString } from "../repr.ts"
import { secondsProblem } from "../seconds.ts"
import { jsonDepth } from "../storage/limits.ts"
import { jsonHoldsUnstorableText, keepableJson, MAX_ERROR_TEXT, storableText } from "../storage/text.ts"
import {
  TaskLeaseLostError,
  TaskLedgerPendingError,
  TaskReceiptUnsignedError,
  TaskReleaseRefusedError,
  TaskResultUnstorableError,
} from "./errors.ts"
import { guardedTaskStore } from "./guarded-store.ts"
import { deriveTaskRequestId } from "./identity.ts"
import {
  leaseOf,
  type StoredTask,
  type TaskLease,
  type TaskRecord,
  type TaskRow,
  taskState,
} from "./record.ts"
import { MemoryTaskStore, type TaskStore } from "./store.ts"

export interface TaskLedgerOptions {
  /** Default: a process-local `MemoryTaskStore`. */
  readonly storage?: TaskStore
  /** Seconds a claim is leased; `<= 0` means unbounded (the original's behaviour: a crash needs a release). Default 3600. */
  readonly leaseTtl?: number
  /**
   * Seconds between lease renewals while a task runs; default a third of each task's own lease. `<= 0` disables.
   * One not shorter than a lease (the ledger's, or a task's `leaseTtl`) is `InvalidOptionError`.
   */
  readonly leaseRenewInterval?: number | null
  /** Seconds between polls when waiting for another worker's task. Default 0.5. */
  readonly pollInterval?: number
  /** Seconds to wait for another worker's task before `TaskLedgerPendingError`; null waits forever. Default 300. */
  readonly pollTimeout?: number | null
  /** This worker's name in leases. Default: a random id per ledger. */
  readonly owner?: string
  readonly clock?: Clock | { now(): number }
  /** Signed receipts for completed and failed tasks and releases (e.g. a `ReceiptEmitter`). */
  readonly receipts?: ReceiptHook | null
  readonly onWarning?: (message: string) => void
}

export interface TaskOptions {
  readonly name: string
  /** Argument names the request id is built from (the original's `id_from`). */
  readonly idFrom?: readonly string[]
  /** This task's lease in seconds (default the ledger's); renewed every third of it unless `leaseRenewInterval` is set. */
  readonly leaseTtl?: number
  /** Wait for a live task held by another worker instead of failing with `TaskLedgerPendingError`. */
  readonly wait?: boolean
  readonly pollTimeout?: number | null
}

export interface TaskCallMeta {
  /** The original's `task_id` kwarg: the request id, verbatim. */
  readonly taskId?: string
  /** The original's `run_id` kwarg: request id `{task}:{runId}`. */
  readonly runId?: string
  readonly wait?: boolean
  readonly signal?: AbortSignal
}

/**
 * What a task body gets. `signal` aborts when the caller aborts, this worker loses its lease, or an unreachable store
 * means the lease would lapse before it could be renewed.
 */
export interface TaskContext {
  readonly requestId: string
  readonly fence: number
  readonly signal: AbortSignal
  /** Renews the lease now; `TaskLeaseLostError` when the task was taken over. After the call ended: does nothing. */
  renewLease(): Promise<void>
}

export type TaskBody<A, R> = (args: A, ctx: TaskContext) => Promise<R> | R

export type TaskFunction<A, R> = ((args: A, meta?: TaskCallMeta) => Promise<R>) & {
  readonly taskName: string
}

export interface TaskReleaseOptions {
  /** `completed`: the task did run (`result` is what later calls get); `not_executed`: the next call runs it. */
  readonly verified: "completed" | "not_executed"
  readonly result?: unknown
  readonly by: string
  readonly reason: string
  /** Release even though the lease is live (the worker may still be running it). */
  readonly force?: boolean
}

/** `v` when it can be the seconds option `name` (see core/seconds.ts), else `InvalidOptionError`. */
function seconds(name: string, v: number, min?: number): number {
  const problem = secondsProblem(name, v, min)
  if (problem) throw new InvalidOptionError(problem)
  return v
}

// An unbounded lease (leaseTtl <= 0) never lapses: only a release ends it. An end no Date holds (a leaseTtl of 1e300,
// a stored row's) threw a RangeError where TaskLedgerPendingError or TaskReleaseRefusedError was due.
// (Dates end 8.64e12 seconds from 1970; 1e12 is the year 33658.)
const leaseEnd = ({ lease_until: t }: TaskLease): string =>
  `lease until ${t === null ? "released" : Math.abs(t) < 1e12 ? new Date(t * 1000).toISOString() : safeString(t)}`

// Nesting a row may hold: the stores' recursive writes overflowed the stack past a few thousand levels (after the body
// ran, stranding the row in flight), and the original's json reads no row past ~1000, so a deeper one in a shared
// task file made every row unreadable to Python workers.
const MAX_DEPTH = 900

const tooDeep = (v: JsonValue): boolean => jsonDepth(v, MAX_DEPTH) > MAX_DEPTH

/** `toJsonValue(v)`, refused when it nests deeper than a row may. */
function rowJson(v: unknown): JsonValue {
  const json = toJsonValue(v)
  if (tooDeep(json)) throw new Error("too deep")
  return json
}

const utf8 = /* @__PURE__ */ new TextEncoder()

/**
 * Whether `text` is over `max` UTF-8 bytes (encoded only when it could be). A row is measured with its id and lease
 * (`id + json + lease`): a Durable Object's holds the id in its key column too, and the lease beside them. Measured on
 * its JSON alone, a row built from a 400 KB id passed and SQLite refused it after the body ran.
 */
const overBytes = (text: string, max: number): boolean =>
  text.length * 3 > max && utf8.encode(text).length > max

/** An outcome's row and its receipt, signed before the write; `receipt` null when the signer failed or is off. */
interface Sealed {
  readonly row: TaskRow
  readonly receipt: SignedReceipt | null
  readonly unsigned?: unknown
}

/** A claim this worker holds. */
interface Held {
  readonly requestId: string
  row: TaskRow
  lease: TaskLease
  version: string
}

export class TaskLedger {
  readonly storage: TaskStore
  readonly leaseTtl: number
  readonly leaseRenewInterval: number
  readonly pollInterval: number
  readonly pollTimeout: number | null
  readonly owner: string
  readonly clock: Clock
  readonly receipts: ReceiptHook | null
  readonly #onWarning: (message: string) => void
  /** The explicit `leaseRenewInterval`, or null: a third of each task's lease. */
  readonly #renew: number | null
  // Every read and write goes through this: a driver's failure reaches callers as TaskStoreUnavailableError.
  readonly #store: TaskStore
  // The store cannot keep U+0000 or an unpaired surrogate: such text is refused or recorded unstorable before a write.
  readonly #strict: boolean
  // The store's largest row in UTF-8 bytes (a Durable Object's SQLite value): a bigger row is refused or recorded
  // unstorable before a write, as such text is.
  readonly #maxBytes: number

  constructor(options: TaskLedgerOptions = {}) {
    this.storage = options.storage ?? new MemoryTaskStore()
    this.#store = guardedTaskStore(this.storage)
    this.#strict = this.storage.limits?.validUnicodeOnly === true
    this.#maxBytes = this.storage.limits?.maxRowBytes ?? Infinity
    this.leaseTtl = seconds("leaseTtl", options.leaseTtl ?? 3600)
    const renew = options.leaseRenewInterval ?? null
    this.#renew = renew === null ? null : seconds("leaseRenewInterval", renew)
    this.leaseRenewInterval = this.#renewEvery(this.leaseTtl)
    this.pollInterval = seconds("pollInterval", options.pollInterval ?? 0.5, 0)
    const pollTimeout = options.pollTimeout === undefined ? 300 : options.pollTimeout
    this.pollTimeout = pollTimeout === null ? null : seconds("pollTimeout", pollTimeout, 0)
    const owner = options.owner ?? `ts-task-${globalThis.crypto.randomUUID().slice(0, 8)}`
    // A lease's owner is compared after a store round trip: a number (a process id) read back unequal, losing results.
    if (typeof owner !== "string" || !owner) throw new InvalidOptionError("owner: pass a non-empty string")
    this.owner = owner
    const c = options.clock
    this.clock = !c ? systemClock : "sleep" in c ? c : { now: () => c.now(), sleep: systemClock.sleep }
    this.receipts = options.receipts ?? null
    this.#onWarning = options.onWarning ?? ((m) => console.warn(`[mycelium] ${m}`))
  }

  /** Wraps `fn` so each distinct task runs once: a completed task returns its stored result, a failed one re-runs. */
  task<A extends object, R>(options: TaskOptions | string, fn: TaskBody<ToolArgs<A>, R>): TaskFunction<A, R> {
    // Read once: options changed after task() (a pollTimeout set to NaN) are not what was checked.
    const { name, idFrom, leaseTtl, wait, pollTimeout } =
      typeof options === "string" ? { name: options } : (options as TaskOptions)
    if (!name) throw new InvalidOptionError("taskLedger.task() needs a name: pass { name }")
    if (idFrom != null && !(Array.isArray(idFrom) && idFrom.every((f) => typeof f === "string" && f)))
      throw new InvalidOptionError('idFrom takes a list of field names: ["order_id"]')
    const ids = idFrom && [...idFrom]
    const ttl = leaseTtl === undefined ? this.leaseTtl : seconds("leaseTtl", leaseTtl)
    const every = this.#renewEvery(ttl)
    if (pollTimeout !== undefined && pollTimeout !== null) seconds("pollTimeout", pollTimeout, 0)
    const opts: TaskOptions = { name, wait, pollTimeout }
    const call = async (args: A, given?: TaskCallMeta | null): Promise<R> => {
      // `null` from JavaScript is no metadata, as for a ledgered tool.
      const meta = given ?? {}
      throwIfAborted(meta.signal)
      // Named verbatim in the id (Python's str()): an object (a cycle overflowed the stack) is no name.
      for (const v of [meta.taskId, meta.runId])
        if (v != null && !["string", "number", "bigint"].includes(typeof v))
          throw new InvalidOptionError("taskId and runId name the request: pass a string")
      // Normalised before anything is claimed: a claim followed by a throw would hold the task for a whole lease.
      const passed = (args ?? {}) as Record<string, unknown>
      const { stored, keyed } = argumentsStoredAndKeyed(passed)
      if (tooDeep(stored))
        throw new LedgerConfigError(
          `arguments nested deeper than ${MAX_DEPTH}: pass plain JSON (nothing was claimed)`,
        )
      const kwargs = stored as Record<string, JsonValue>
      // The id is derived from the exact values (a bigint, a float parseToolArguments kept), as the original's: from
      // the stored form 2n ** 60n hashed as the string "1152921504606846976" and replayed that string's task.
      const exact = keyed as Record<string, JsonValue>
      if (meta.taskId !== undefined) kwargs.task_id = exact.task_id = meta.taskId
      if (meta.runId !== undefined) kwargs.run_id = exact.run_id = meta.runId
      const requestId = deriveTaskRequestId({ task: name, kwargs: exact, idFrom: ids })
      // The row (and its receipt's inputs) holds the arguments the body gets, as the original's claim stores its
      // clean kwargs: task_id and run_id only name the request.
      const { task_id: _tid, run_id: _rid, ...clean } = kwargs
      // A store that cannot keep U+0000 or an unpaired surrogate refused such a claim as an outage: refused typed.
      // So are arguments leaving no room in its rows for a failure's text: the claim held, the body ran, and its
      // failure (or a result) could not be recorded.
      if (this.storage.limits) {
        const text = JSON.stringify([requestId, name, clean])
        if (this.#strict) keepableJson(text, requestId)
        if (overBytes(requestId + text + this.owner, this.#maxBytes - 3 * MAX_ERROR_TEXT))
          throw new LedgerConfigError(
            `request '${clip(requestId)}': arguments over the store's row limit; nothing was claimed`,
          )
      }
      const claimed = await this.#claim(opts, ttl, requestId, clean, meta)
      if (claimed.kind === "completed") return claimed.result as R
      const { task_id: _t, run_id: _r, ...body } = passed
      return await this.#run(claimed.held, ttl, every, body as A, fn as TaskBody<A, R>, meta.signal)
    }
    return Object.assign(call, { taskName: name })
  }

  /** Seconds between renewals of a `ttl`-second lease. */
  #renewEvery(ttl: number): number {
    const every = this.#renew ?? ttl / 3
    // A renewal due no sooner than the lease lapses cannot keep it: another worker could take the task over mid-run.
    if (ttl > 0 && every >= ttl)
      throw new InvalidOptionError(
        `leaseRenewInterval ${every} must be shorter than the leaseTtl it renews (${ttl}), or unset`,
      )
    return every
  }

  get(requestId: string): Promise<StoredTask | null> {
    return this.#store.get(requestId)
  }

  async list(): Promise<StoredTask[]> {
    const out: StoredTask[] = []
    for await (const t of this.#store.list()) out.push(t)
    return out.sort((a, b) => a.row.started_at - b.row.started_at)
  }

  async #claim(
    opts: TaskOptions,
    ttl: number,
    requestId: string,
    kwargs: Record<string, JsonValue>,
    meta: TaskCallMeta,
  ): Promise<{ kind: "completed"; result: JsonValue } | { kind: "claimed"; held: Held }> {
    const wait = meta.wait ?? opts.wait ?? false
    const timeout = opts.pollTimeout === undefined ? this.pollTimeout : opts.pollTimeout
    const deadline = timeout === null ? Infinity : this.clock.now() + timeout
    for (;;) {
      throwIfAborted(meta.signal)
      const current = await this.#store.get(requestId)
      const now = this.clock.now()
      const state = current ? taskState(current, now) : null
      if (state === "completed") return { kind: "completed", result: current?.row.result ?? null }
      if (state === "live") {
        const lease = current ? leaseOf(current) : null
        if (!wait || now >= deadline) {
          throw new TaskLedgerPendingError(
            `Task '${opts.name}' request '${clip(requestId)}' is already in-flight` +
              (lease
                ? ` (worker ${lease.owner}, ${leaseEnd(lease)})`
                : " (claimed without a lease, e.g. by the Python original: release it if its worker is gone)") +
              (wait ? "; gave up waiting." : "; retry later, call with wait: true, or release it."),
            requestId,
          )
        }
        await this.clock.sleep(this.pollInterval, meta.signal)
        continue
      }
      const row: TaskRow = {
        request_id: requestId,
        task: opts.name,
        args: [],
        kwargs,
        status: "in-flight",
        result: null,
        error: null,
        started_at: now,
        finished_at: null,
      }
      const lease: TaskLease = {
        fence: (current?.lease?.fence ?? 0) + 1,
        owner: this.owner,
        lease_until: ttl > 0 ? now + ttl : null,
        heartbeat_at: now,
        started_at: now,
      }
      const version = await this.#store.swap(requestId, current?.version ?? null, { row, lease })
      if (version !== null) return { kind: "claimed", held: { requestId, row, lease, version } }
      // Another worker changed the task between our read and our write: decide again on what it wrote.
    }
  }

  async #run<A, R>(
    held: Held,
    ttl: number,
    every: number,
    args: A,
    fn: TaskBody<A, R>,
    callerSignal: AbortSignal | undefined,
  ): Promise<R> {
    const lost = new AbortController()
    const signal = callerSignal ? AbortSignal.any([callerSignal, lost.signal]) : lost.signal
    // Stops the body once the lease could lapse before a renewal proves it (by this worker's clock), since another
    // worker may then take the task over; else re-arms for that moment. Called by a failed renewal, and by its timer:
    // a renewal that hangs (no reply, no driver timeout) never fails. The margin is a renewal interval, as long as
    // that leaves the next renewal time to answer (else half the time it has). A timer that woke early (capped at
    // ~24.8 days) only re-arms.
    const margin = Math.max(Math.min(every, (ttl - every) / 2), 0)
    let lapse: ReturnType<typeof setTimeout> | undefined
    const watch = (why = "no answer") => {
      clearTimeout(lapse)
      const until = held.lease.lease_until
      if (until === null) return
      const left = until - margin - this.clock.now()
      if (left > 0) {
        lapse = setTimeout(watch, timerMs(left))
        ;(lapse as { unref?: () => void }).unref?.()
      } else
        lost.abort(
          new TaskLeaseLostError(
            `Task request '${clip(held.requestId)}' could not renew its lease before it lapses (${why}); ` +
              "stopping so another worker can take it over",
          ),
        )
    }
    let chain: Promise<unknown> = Promise.resolve()
    const serial = (op: () => Promise<void>): Promise<void> => {
      // Awaited, not handed back from then(): an op that throws before its first await (a finish whose store throws
      // at once) would be a promise already rejected, which workerd reports as uncaught.
      const prev = chain
      const run = (async () => {
        await prev
        await op()
      })()
      chain = run.catch(() => undefined)
      return run
    }
    const renew = (): Promise<void> =>
      serial(async () => {
        if (!(ttl > 0)) return
        const now = this.clock.now()
        const lease: TaskLease = { ...held.lease, lease_until: now + ttl, heartbeat_at: now }
        let version: string | null
        try {
          version = await this.#swapHeld(held, { row: held.row, lease })
        } catch (e) {
          // The store is unreachable: stop the body now if the lease could lapse before the next renewal.
          watch(errorText(e))
          throw e
        }
        if (version === null) {
          lost.abort(
            new TaskLeaseLostError(`Task request '${clip(held.requestId)}' was taken over by another worker`),
          )
          // Not signal.reason: once the caller gave up, that is the caller's reason, and the body could not tell
          // that the task is no longer its own.
          throw lost.signal.reason
        }
        held.lease = lease
        held.version = version
        watch()
      })
    // One timed renewal at a time: in an outage each waits out the store's timeout, and a backlog of them (one per
    // tick, serial) held the call up long after its body returned.
    let renewing = false
    const timer =
      ttl > 0 && every > 0
        ? setInterval(() => {
            if (renewing) return
            // Lapsed by this worker's clock: another worker may hold it now, and a timed renewal would only wait out
            // the store (the body's own renewLease() still asks it, to tell a takeover from an outage).
            if (this.clock.now() >= (held.lease.lease_until ?? Infinity)) return watch()
            renewing = true
            renew()
              .catch(() => {})
              .finally(() => (renewing = false))
          }, timerMs(every))
        : null
    ;(timer as { unref?: () => void } | null)?.unref?.()
    const ctx: TaskContext = { requestId: held.requestId, fence: held.lease.fence, signal, renewLease: renew }
    const stop = async () => {
      if (timer !== null) clearInterval(timer)
      await chain
      // The call has ended: a later renewLease() does nothing, as under an unbounded lease. It wrote a live lease back
      // onto the finished row and armed the lapse watch, which then aborted ctx.signal though nothing was lost.
      // (A flag cost the tasks entry 13 B it has no room for; nothing reads ttl after this.)
      ttl = 0
      clearTimeout(lapse)
    }
    watch()
    let result: R
    try {
      // A caller that gave up during the claim is gone: recorded failed before the body's effect, so a retry runs it.
      throwIfAborted(callerSignal)
      result = await fn(args, ctx)
    } catch (err) {
      await stop()
      try {
        // Bounded and cleaned as the ledger records a failure: a task store refused an error of several MB.
        await serial(async () => {
          await this.#finish(
            held,
            await this.#seal(held, "failed", null, storableText(errorText(err), MAX_ERROR_TEXT)),
          )
        })
      } catch (e) {
        if (e instanceof TaskLeaseLostError) lost.abort(e)
        this.#warnFailureNotRecorded(held, e)
      }
      throw err
    }
    let stored: JsonValue
    try {
      stored = rowJson(result)
      // Checked before the write: the store refused it after the body ran, and the row stayed in flight until its
      // lease lapsed and the body ran again.
      if (this.storage.limits) {
        const text = JSON.stringify({ ...held.row, result: stored })
        if (this.#strict && jsonHoldsUnstorableText(text))
          throw new Error("it holds U+0000 or an unpaired surrogate")
        if (overBytes(held.requestId + text + JSON.stringify(held.lease), this.#maxBytes))
          throw new Error("its row is over the store's row limit")
      }
    } catch (e) {
      // A cycle overflows the conversion. Leaving the row in flight would block every caller until the lease
      // lapses; a failed row says why and lets the next call run the task again.
      await stop()
      const unstorable = new TaskResultUnstorableError(
        `Task request '${clip(held.requestId)}' returned a result that is not JSON the store can keep (${errorText(e)}); it was recorded ` +
          "as failed and the next call runs it again. Return plain JSON (no cycles, no nesting 900 deep) from the task.",
      )
      try {
        // Cleaned and cut as any failure's text: a toJSON() or getter that threw a message holding U+0000 (or
        // megabytes of text) had this write refused too, and the row stayed in flight after the body ran.
        await serial(async () => {
          await this.#finish(
            held,
            await this.#seal(held, "failed", null, storableText(errorText(unstorable), MAX_ERROR_TEXT)),
          )
        })
      } catch (e2) {
        // Refused by the fence like any outcome: what the body left running on ctx.signal stops here too.
        if (e2 instanceof TaskLeaseLostError) lost.abort(e2)
        this.#warnFailureNotRecorded(held, e2)
      }
      throw unstorable
    }
    // Signed while the lease is still renewed; then renewal stops and the outcome is written.
    const sealed = await this.#seal(held, "completed", stored, null)
    await stop()
    try {
      await serial(() => this.#finish(held, sealed))
    } catch (e) {
      if (!(e instanceof TaskLeaseLostError)) throw e
      // Work the body left running on ctx.signal stops too: the task is another worker's now.
      lost.abort(e)
      this.#onWarning(`task result discarded for request '${clip(held.requestId)}': ${e.message}`)
    }
    return result
  }

  /**
   * `next` over the held task. A version this worker never saw may be its own: a renewal whose answer was lost (a
   * timeout, a reset) can still have been written. Read as a takeover, a finished result would be dropped and the
   * body run again. Nobody else writes a row still in flight under this claim's fence and owner (a takeover raises
   * the fence, a release ends the row), so that version is adopted.
   */
  async #swapHeld(held: Held, next: TaskRecord): Promise<string | null> {
    const version = await this.#store.swap(held.requestId, held.version, next)
    if (version !== null) return version
    const now = await this.#store.get(held.requestId)
    const l = now?.lease
    // A row started after this claim is a re-claim by the original (it writes no lease): leaseOf's test, never ours.
    if (
      now?.row.status !== "in-flight" ||
      now.row.started_at !== held.row.started_at ||
      l?.fence !== held.lease.fence ||
      l.owner !== held.lease.owner
    )
      return null
    return await this.#store.swap(held.requestId, now.version, next)
  }

  #warnFailureNotRecorded(held: Held, e: unknown): void {
    this.#onWarning(
      e instanceof TaskReceiptUnsignedError
        ? e.message
        : e instanceof ReceiptAppendError
          ? `Task request '${clip(held.requestId)}' is recorded as failed, but its receipt ${e.receiptId} was not stored ` +
            `(${errorText(e.cause)}). Restore the receipt store.`
          : `could not record the failure of task request '${clip(held.requestId)}': ${errorText(e)}`,
    )
  }

  /**
   * The outcome's row and its receipt, signed before the write. A completion is sealed while the lease is still
   * renewed: a signer slower than what was left of the lease let it lapse, and another worker ran the task again.
   */
  async #seal(
    held: Held,
    status: "completed" | "failed",
    result: unknown,
    error: string | null,
  ): Promise<Sealed> {
    const now = this.clock.now()
    const row: TaskRow = {
      ...held.row,
      status,
      result: status === "completed" ? toJsonValue(result) : null,
      error,
      finished_at: now,
    }
    // A signer outage must not leave the row in flight: once its lease lapsed the body would run again for an
    // outcome that is already known. Record it without a receipt, then say so.
    if (this.receipts)
      try {
        return {
          row,
          receipt: await this.receipts.sign({
            action: row.task,
            actionKind: "task",
            requestId: row.request_id,
            args: row.args,
            kwargs: row.kwargs,
            outputs: row.result,
            status,
            error,
            timestamp: now,
          }),
        }
      } catch (unsigned) {
        return { row, receipt: null, unsigned }
      }
    return { row, receipt: null }
  }

  async #finish(held: Held, { row, receipt, unsigned }: Sealed): Promise<void> {
    const lease: TaskLease = { ...held.lease, lease_until: null, receipt_ref: receipt?.receipt_id ?? null }
    const version = await this.#swapHeld(held, { row, lease })
    if (version === null)
      throw new TaskLeaseLostError(
        `Task request '${clip(held.requestId)}' was taken over or released; this worker's ${row.status} outcome was not recorded`,
      )
    held.row = row
    held.lease = lease
    held.version = version
    if (this.receipts && receipt === null)
      throw new TaskReceiptUnsignedError(held.requestId, row.status as "completed" | "failed", unsigned)
    await appendReceipt(this.receipts, receipt, held.requestId)
  }

  /**
   * An operator's verdict on a task that is stuck in flight (its worker died, or the original claimed it without a
   * lease) or failed. `completed` stores `result` for later calls; `not_executed` lets the next call run it.
   */
  async release(requestId: string, options: TaskReleaseOptions): Promise<TaskRecord> {
    // Operators' input arrives from CLIs and HTTP bodies: check its shape, not just its presence.
    if (typeof options !== "object" || options === null)
      throw new TaskReleaseRefusedError("release requires options { verified, by, reason }")
    const { verified, by, reason } = options
    if (verified !== "completed" && verified !== "not_executed")
      throw new TaskReleaseRefusedError(
        `verified must be 'completed' or 'not_executed', got '${safeString(verified)}'`,
      )
    if (blank(by))
      throw new TaskReleaseRefusedError(
        "release requires 'by' (who verified the outcome) as a non-empty string",
      )
    if (blank(reason)) throw new TaskReleaseRefusedError("release requires a 'reason' as a non-empty string")
    let releasedResult: JsonValue = null
    if (verified === "completed")
      try {
        releasedResult = rowJson(options.result ?? null)
      } catch (e) {
        throw new TaskReleaseRefusedError(
          `the release result is not JSON (${errorText(e)}); pass plain JSON (no cycles, no nesting 900 deep) as result`,
        )
      }
    // Before any read: such an id, or such text in what the release writes, was refused by the store as an outage.
    if (this.#strict) keepableJson(JSON.stringify([requestId, by, reason, releasedResult]), requestId)
    for (;;) {
      const current = await this.#store.get(requestId)
      if (!current)
        throw new TaskReleaseRefusedError(`Cannot release unknown task request '${clip(requestId)}'`)
      const now = this.clock.now()
      const state = taskState(current, now)
      if (state === "completed")
        throw new TaskReleaseRefusedError(
          `Task request '${clip(requestId)}' is completed; nothing to release`,
        )
      // A verdict stands until the task runs again (a claim starts a new lease): a second one overwrote the first's
      // who and why, and could turn a `not_executed` into a result nobody ran for. The original's claim writes the
      // row alone: a verdict in the lease beside a newer row is spent (read as standing, that task stayed stranded).
      const lease = leaseOf(current)
      const by0 = lease?.resolved_by
      if (by0 != null)
        throw new TaskReleaseRefusedError(
          `Task request '${clip(requestId)}' was already released by ${clip(safeString(by0))}; the next call runs it`,
        )
      // An unbounded lease is live while its holder runs; a claim of the original's (no lease) is the stuck case.
      if (state === "live" && lease && !options.force)
        throw new TaskReleaseRefusedError(
          `Task request '${clip(requestId)}' is held by ${lease.owner} under a ${leaseEnd(lease)}; ` +
            (lease.lease_until === null
              ? "pass force: true if that worker is gone"
              : "wait for the lease to lapse or pass force: true"),
        )
      const row: TaskRow =
        verified === "completed"
          ? {
              ...current.row,
              status: "completed",
              result: releasedResult,
              error: null,
              finished_at: now,
            }
          : {
              ...current.row,
              status: "failed",
              error: current.row.error ?? `released as not executed by ${by}: ${reason}`,
              finished_at: now,
            }
      // Refused as an outage by the store (SQLITE_TOOBIG), which no retry could end. Its lease holds `by` and `reason`
      // as JSON, where a control character takes six bytes: measured raw, a 400,000-character reason passed.
      // Only under a limit: a row another store read may hold a bigint (the original's big ints), which JSON refuses.
      if (
        this.#maxBytes < Infinity &&
        overBytes(requestId + JSON.stringify([row, by, reason]), this.#maxBytes)
      )
        throw new TaskReleaseRefusedError(
          `Task request '${clip(requestId)}' was not released: its row is over the store's row limit`,
        )
      // Signed before the write: a signer outage refuses the release and changes nothing.
      let receipt: Awaited<ReturnType<ReceiptHook["sign"]>> | null = null
      if (this.receipts)
        try {
          receipt = await this.receipts.sign({
            action: row.task,
            actionKind: "task",
            requestId,
            args: row.args,
            kwargs: row.kwargs,
            outputs: {
              operator_release: true,
              verified,
              resolved_by: by,
              resolution_reason: reason,
              released_from_outcome: state === "failed" ? "failed" : "in-flight",
              result: verified === "completed" ? row.result : null,
            },
            status: verified === "completed" ? "completed" : "failed",
            // As the action ledger's: the error the row held before the release (null for one in flight).
            error: current.row.error,
            timestamp: now,
          })
        } catch (e) {
          throw new TaskReleaseRefusedError(
            `Task request '${clip(requestId)}' was not released: its receipt could not be signed (${errorText(e)}). ` +
              "Restore the signer and release it again.",
            { cause: e },
          )
        }
      const next: TaskRecord = {
        row,
        lease: {
          // A lease older than the row is the original's claim's predecessor: its started_at would hide this verdict.
          ...(lease ?? {
            fence: current.lease?.fence ?? 0,
            owner: by,
            heartbeat_at: now,
            started_at: row.started_at,
          }),
          lease_until: null,
          receipt_ref: receipt?.receipt_id ?? null,
          resolved_by: by,
          resolution_reason: reason,
          resolved_at: now,
        },
      }
      if ((await this.#store.swap(requestId, current.version, next)) === null) continue
      await appendReceipt(this.receipts, receipt, requestId)
      return next
    }
  }
}
