// StateFlush: a run's partial state is written when the run is cancelled, disconnected or fails (and on
// completion), so an aborted run can be resumed instead of redone.

import { InvalidOptionError } from "../errors.ts"
import { isObject } from "../is-object.ts"
import { cloneJson, type JsonValue, toJsonValue } from "../ledger/model/canonical.ts"
import { checkKind, kindOf, optionsObject, signalOption } from "../options.ts"
import { defineOwn } from "../own.ts"
import { safeString } from "../repr.ts"
import { guardStoreCall } from "../storage/store-failure.ts"
import {
  StateFlushError,
  type StateRunEnding,
  StateSnapshotUnstoredError,
  StateStoreUnavailableError,
} from "./errors.ts"
import { checkStore, flushTriggers } from "./options.ts"
import {
  type FlushTrigger,
  MemoryStateFlushStore,
  type SnapshotStatus,
  type StateFlushStore,
  type StateSnapshot,
} from "./snapshot.ts"

export interface StateFlushOptions {
  /** Default: a process-local `MemoryStateFlushStore`. */
  readonly storage?: StateFlushStore
  /** Which endings write a snapshot. Default all: cancel, disconnect, error. */
  readonly flushOn?: readonly FlushTrigger[]
  /** Write a `completed` snapshot when the run returns. Default true. */
  readonly flushOnComplete?: boolean
  /** Epoch seconds. */
  readonly now?: () => number
}

export interface StateRunOptions {
  /** Cancelling the run: when it aborts, the state is flushed as `aborted` / `cancel` at once. */
  readonly signal?: AbortSignal
  /** The client went away (e.g. an HTTP request's signal): flushed as `aborted` / `disconnect`. */
  readonly disconnectSignal?: AbortSignal
  /** Start from this state, e.g. `await flush.resume(runId)`. */
  readonly initial?: Readonly<Record<string, unknown>>
}

export interface FlushArgs {
  readonly reason?: string | null
  readonly error?: string | null
}

// A Symbol message or a throwing name threw here: the caller got a TypeError and the run's end was not stored.
function errorText(e: unknown): string {
  try {
    if (e instanceof Error) return `${e.name}: ${e.message}`
  } catch {}
  return safeString(e)
}

/** State as JSON, or a StateFlushError saying what to do (a cycle overflows the conversion). */
function jsonState(value: Readonly<Record<string, unknown>>, what: string): Record<string, JsonValue> {
  let json: JsonValue
  try {
    json = toJsonValue(value)
  } catch (e) {
    throw new StateFlushError(
      `${what} is not JSON (${errorText(e)}); record plain JSON values (no cycles, no nesting thousands deep)`,
    )
  }
  // Only an object is a state: an array took the run's records invisibly and was stored as a snapshot no store
  // reads back (corrupt), and null or a string threw a bare TypeError.
  if (!isObject(json))
    throw new StateFlushError(`${what} is not an object: pass a plain object of JSON values`)
  return json
}

/** A call of the store whose failure, thrown or rejected, is a StateStoreUnavailableError (a ledger error stays). */
const guarded = <T>(op: string, fn: () => Promise<T>): Promise<T> =>
  // Promise.resolve: a store answering without a promise worked when it was awaited directly. It hands a promise
  // back as it is, never adopting it (which workerd reports as uncaught when it is rejected: see #write).
  guardStoreCall("state store", op, () => Promise.resolve(fn()), StateStoreUnavailableError)

// A run's ending reports a failed save with StateSnapshotUnstoredError, which already says the store failed: its
// cause stays the driver's error, as it was before saves were guarded.
const storeCause = (e: unknown): unknown => (e instanceof StateStoreUnavailableError ? e.cause : e)

const runIdOf = (runId: unknown, call: string): string => {
  // A string: a number saved as `run_id` 5 made a snapshot that every persistent store then reads as corrupt.
  if (typeof runId !== "string" || !runId) throw new StateFlushError(`${call} needs a run id`)
  return runId
}

const STATUSES: ReadonlySet<string> = new Set(["in-progress", "completed", "aborted", "error"])
// The stored fields are strings or null; anything else would be dropped when the snapshot is read back.
const text = (v: unknown): string | null =>
  v === undefined || v === null ? null : typeof v === "string" ? v : safeString(v)

// How a run ends (the ending's snapshot, if `write` and none was already written), and the status of the final
// snapshot that stands: module-private, so the handle's public surface is only what a run body may call.
type Ending = (
  status: SnapshotStatus,
  args: FlushArgs,
  write: boolean,
) => [SnapshotStatus, Promise<StateSnapshot>]
const endings = new WeakMap<StateFlushRun, Ending>()

function endRun(
  run: StateFlushRun,
  status: SnapshotStatus,
  args: FlushArgs,
  write = true,
): [SnapshotStatus, Promise<StateSnapshot>] {
  const end = endings.get(run)
  if (!end) throw new StateFlushError(`run '${run.runId}' was not started by StateFlush.run()`)
  return end(status, args, write)
}

/** The handle a run body gets (made by `StateFlush.run()`). */
export class StateFlushRun {
  readonly runId: string
  /** Aborts when the run is cancelled or disconnected. */
  readonly signal: AbortSignal
  readonly #flush: StateFlush
  #state: Record<string, JsonValue>
  #flushed: Promise<StateSnapshot> | null = null
  #flushedStatus: SnapshotStatus = "in-progress"
  /** The last save asked for: each save waits for it, so a slow earlier one never lands over a later one. */
  #saving: Promise<unknown> = Promise.resolve()
  /**
   * Set once the run has ended (returned, threw, cancelled, disconnected), whether or not that ending wrote: what
   * flush() and checkpoint() then return, writing nothing (an ending not flushed on gives its snapshot unstored).
   */
  #final: Promise<StateSnapshot> | null = null

  constructor(
    flush: StateFlush,
    runId: string,
    signal: AbortSignal,
    initial: Readonly<Record<string, unknown>>,
  ) {
    this.#flush = flush
    this.runId = runId
    this.signal = signal
    this.#state = jsonState(initial, "the initial state")
    endings.set(this, (status, args, write) => {
      // An ending that writes nothing answers its snapshot unstored, never an earlier save's failure.
      const unwritten = write ? null : Promise.resolve(this.#snapshot(status, args))
      this.#final ??= this.#flushed ?? unwritten ?? this.flush(status, args)
      return [this.#flushedStatus, unwritten ?? this.#final]
    })
  }

  /** Shallow merge, as the original's `dict.update`. Values are stored as JSON. */
  record(patch: Readonly<Record<string, unknown>>): void {
    const json = jsonState(patch, "the recorded patch")
    // Defined, not assigned: assigning a `__proto__` member would set the state's prototype, dropping the key and
    // lifting its members to the top level of every snapshot.
    for (const k of Object.keys(json)) defineOwn(this.#state, k, json[k])
  }

  /** A copy of the state recorded so far. */
  get state(): Record<string, JsonValue> {
    return cloneJson(this.#state)
  }

  /** True once the run's final snapshot was written (explicitly or by its ending). */
  get flushed(): boolean {
    return this.#flushed !== null
  }

  /**
   * Writes the final snapshot. Later endings of the run write nothing more, and once the run has ended (a cancel
   * the body ignored, say) neither does this: the body would otherwise turn an `aborted` snapshot into `completed`.
   */
  flush(status: SnapshotStatus, args?: FlushArgs | null): Promise<StateSnapshot> {
    // Refused before it counts as the final snapshot: an unknown status would be stored and make the snapshot
    // unreadable (a corrupt store entry); the run's own ending still writes a proper one.
    if (!STATUSES.has(status))
      return Promise.reject(
        new StateFlushError(
          `unknown snapshot status '${safeString(status)}': use in-progress, completed, aborted or error`,
        ),
      )
    let fields: FlushArgs
    try {
      fields = optionsObject(args, "run.flush() args")
    } catch (e) {
      return Promise.reject(e)
    }
    if (this.#final) return this.#final
    this.#flushedStatus = status
    this.#flushed = this.#write(status, fields)
    return this.#flushed
  }

  /** An `in-progress` snapshot that does not end the run: a crash after it still leaves this much to resume. */
  checkpoint(): Promise<StateSnapshot> {
    // After the final snapshot (e.g. a cancel the body ignored) a checkpoint would turn it back to in-progress.
    return this.#final ?? this.#flushed ?? this.#write("in-progress", {})
  }

  complete(): Promise<StateSnapshot> {
    return this.flush("completed")
  }

  /** The client went away: `aborted` / `disconnect` when "disconnect" is flushed on, else `completed`. */
  disconnect(): Promise<StateSnapshot> {
    return this.#flush.flushOn.has("disconnect")
      ? this.flush("aborted", { reason: "disconnect" })
      : this.flush("completed")
  }

  #snapshot(status: SnapshotStatus, args: FlushArgs): StateSnapshot {
    return {
      run_id: this.runId,
      status,
      state: cloneJson(this.#state),
      updated_at: this.#flush.now(),
      reason: text(args.reason),
      error: text(args.error),
    }
  }

  /** Saves the state as of this call, after every save asked for before it (stores need not keep call order). */
  #write(status: SnapshotStatus, args: FlushArgs): Promise<StateSnapshot> {
    const snapshot = this.#snapshot(status, args)
    // Awaited, not returned from then(): workerd reports a store's promise that is rejected when it is handed back
    // (a refusal before any I/O, as the Durable Object store's of an oversize snapshot) as uncaught, handled or not;
    // so is an async function's that throws at once (a store whose save throws before returning a promise).
    const saved = (async () => {
      await this.#saving
      await guarded("save", () => this.#flush.storage.save(snapshot))
      return snapshot
    })()
    this.#saving = saved.catch(() => {})
    return saved
  }
}

export class StateFlush {
  readonly storage: StateFlushStore
  readonly flushOn: ReadonlySet<FlushTrigger>
  readonly flushOnComplete: boolean
  readonly now: () => number

  /** Options of the wrong kind are refused with InvalidOptionError naming the option. */
  constructor(options?: StateFlushOptions | null) {
    const o = optionsObject(options, "StateFlush options")
    checkStore(o.storage)
    checkKind(o.flushOnComplete, "flushOnComplete", "boolean")
    checkKind(o.now, "now", "function")
    this.storage = o.storage ?? new MemoryStateFlushStore()
    this.flushOn = flushTriggers(o.flushOn)
    this.flushOnComplete = o.flushOnComplete ?? true
    this.now = o.now ?? (() => Date.now() / 1000)
  }

  /** The run's snapshot, or null; a store outage is StateStoreUnavailableError. */
  async load(runId: string): Promise<StateSnapshot | null> {
    const id = runIdOf(runId, "load()")
    // Awaited, not handed back: see StateFlushRun's #write.
    return await guarded("load", () => this.storage.load(id))
  }

  /** The flushed state of a run, to start its next attempt from. */
  async resume(runId: string): Promise<Record<string, JsonValue>> {
    const s = await this.load(runIdOf(runId, "resume()"))
    if (!s) throw new StateFlushError(`No flushed state found for run '${runId}'`)
    return cloneJson(s.state as Record<string, JsonValue>)
  }

  /**
   * Runs `fn` with a handle to record state. Its ending decides the snapshot (unless `fn` flushed one itself):
   * return → `completed`; the cancel signal → `aborted`/`cancel` (written as soon as it fires, and the run rejects
   * with its reason without waiting for `fn`); the disconnect signal → `aborted`/`disconnect`; a throw → `error`.
   * Errors are never swallowed.
   */
  async run<R>(
    runId: string,
    fn: (run: StateFlushRun) => Promise<R> | R,
    runOptions?: StateRunOptions | null,
  ): Promise<R> {
    runIdOf(runId, "run()")
    // Refused before the run starts: called as the body, it failed the run with a TypeError stored as its error.
    if (typeof fn !== "function")
      throw new InvalidOptionError(`run() needs a body function, got ${kindOf(fn)}`)
    const o = optionsObject(runOptions, "run() options")
    const options = {
      signal: signalOption(o.signal, "signal"),
      disconnectSignal: signalOption(o.disconnectSignal, "disconnectSignal"),
    }
    const stop = new AbortController()
    const signals = [options.signal, options.disconnectSignal].filter((s): s is AbortSignal => !!s)
    const signal = signals.length ? AbortSignal.any([...signals, stop.signal]) : stop.signal
    const run = new StateFlushRun(this, runId, signal, o.initial ?? {})

    // The run's final snapshot; a failed save is StateSnapshotUnstoredError, which keeps how the run ended (an abort's
    // reason, the body's result) beside the store's error instead of the store's error alone.
    const unstored = (how: string, status: SnapshotStatus, e: unknown) =>
      `Run '${runId}' ${how}, but its final snapshot (${status}) was not stored ` +
      `(${errorText(storeCause(e))}); restore the store`
    const end = async (
      status: SnapshotStatus,
      args: FlushArgs,
      ended: Omit<StateRunEnding, "runId" | "status">,
      write = true,
    ) => {
      const [stood, saved] = endRun(run, status, args, write)
      try {
        await saved
      } catch (e) {
        throw new StateSnapshotUnstoredError(
          ended.returned
            ? `${unstored("returned", stood, e)}. The body finished: its result is this error's result`
            : unstored(`was aborted (${errorText(ended.abortReason)})`, stood, e),
          { runId, status: stood, ...ended },
          storeCause(e),
        )
      }
    }

    let onAbort: (() => void) | null = null
    const aborted = new Promise<never>((_, reject) => {
      const fire = (source: AbortSignal, trigger: "cancel" | "disconnect") => {
        const reason: unknown = source.reason
        const ended = { returned: false, abortReason: reason }
        // Every ending goes through endRun, written or not: a cancel not flushed on still ends the run.
        const done =
          trigger === "cancel"
            ? end(
                "aborted",
                { reason: "cancel", error: errorText(reason) },
                ended,
                this.flushOn.has("cancel"),
              )
            : // Through endRun: a disconnect after the body's own final snapshot, or after a cancel, writes nothing.
              end(
                this.flushOn.has("disconnect") ? "aborted" : "completed",
                this.flushOn.has("disconnect") ? { reason: "disconnect" } : {},
                ended,
              )
        done.then(
          () => reject(reason),
          (e: unknown) => reject(e),
        )
      }
      const listeners: Array<() => void> = []
      for (const [s, trigger] of [
        [options.signal, "cancel"],
        [options.disconnectSignal, "disconnect"],
      ] as const) {
        if (!s) continue
        const l = () => fire(s, trigger)
        if (s.aborted) {
          l()
          continue
        }
        s.addEventListener("abort", l, { once: true })
        listeners.push(() => s.removeEventListener("abort", l))
      }
      onAbort = () => {
        for (const off of listeners) off()
      }
    })
    aborted.catch(() => {})

    try {
      let result: R
      try {
        // A signal aborted before the run starts: the body never runs (it used to run, and run() resolved as if the
        // cancelled run had completed).
        // Started a microtask later, its promise awaited, not handed back from then(): an async body that throws before
        // its first await gives a promise already rejected, which workerd then reports as uncaught (see #write).
        const body = signal.aborted
          ? aborted
          : (async () => {
              await undefined
              return await fn(run)
            })()
        result = await Promise.race([body, aborted])
        // Aborted while the body was finishing: the abort's ending (already written) decides, and run() rejects.
        if (signal.aborted) await aborted
      } catch (err) {
        // The abort path already wrote (or deliberately skipped) its snapshot; surface what ended the run. A body that
        // rejects on run.signal (as fetch does) gets here first, but a snapshot the store refused outranks its error.
        if (signal.aborted)
          throw await aborted.then(null, (e) => (e instanceof StateSnapshotUnstoredError ? e : err))
        try {
          await endRun(run, "error", { reason: "error", error: errorText(err) }, this.flushOn.has("error"))[1]
        } catch (storeErr) {
          // The store's error alone would hide why the run failed; the body's error stays reachable as the cause.
          throw new StateFlushError(
            `${unstored(`failed (${errorText(err)})`, "error", storeErr)}. The state recorded since the last ` +
              "stored snapshot is lost; the run's error is this error's cause",
            { cause: err },
          )
        }
        throw err
      }
      // Outside the body's try: a store that fails here did not fail the run, which returned.
      await end("completed", {}, { returned: true, result }, this.flushOnComplete)
      return result
    } finally {
      ;(onAbort as (() => void) | null)?.()
      stop.abort()
    }
  }
}
