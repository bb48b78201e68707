// A model's retry of a failed tool call is a new tool call: a new id, so a new ledger key. When the failed call may
// have taken effect (the gateway timed out after charging, the completion write hit an outage), the framework shows
// the model the error (LangGraph's ToolNode, the AI SDK, OpenAI Agents' errorFunction), the model calls again with
// the same arguments, and the ledger runs the payment a second time. Within one conversation (a thread, or the one
// run the framework hands every call), a call with the same tool and arguments as an earlier call that failed after
// its body started is therefore the same intent until that call is settled. So is a call the framework gave up on
// while its body still ran (OpenAI Agents' `timeoutMs`, an aborted run): the model was told it timed out, and the
// body may still charge.
import { onAbort, throwIfAborted } from "../core/ledger/clock.ts"
import { LedgerHardBlockError } from "../core/ledger/errors.ts"
import type { CallMeta } from "../core/ledger/index.ts"
import { throwIfUnstorable } from "../core/ledger/machine/unstorable.ts"
import type { LedgerEntry } from "../core/ledger/model/entry.ts"
import { type KeyedMeta, onKeyed } from "../core/ledger/model/on-keyed.ts"
import { sha256Hex } from "../core/ledger/model/sha256.ts"
import { clip } from "../core/repr.ts"

/** What the check reads from the ledger (an `ActionLedger`; a `RemoteLedger` has no `get`, and is not checked). */
type Row = LedgerEntry
interface RowReader {
  get(requestId: string): Promise<Row | null>
  waitForTransition?(requestId: string, options: { readonly signal?: AbortSignal | undefined }): Promise<Row>
}

interface Earlier {
  /** Its node and arguments (its key in the conversation). */
  readonly key: string
  readonly requestId: string
  readonly toolCallId: string
  /** Set while a call its framework gave up on still runs in this process. */
  readonly running?: true
  /** Set once its row reads completed: no settlement can change it, so a full conversation reads it no more. */
  completed?: true
}

/**
 * Kept per tool and ledger in this process. A conversation holding `PER_SCOPE` calls, those it remembers and those
 * running, takes no new call of the tool: dropping its oldest would let a model that sprays failing calls push out
 * the hold on its own ambiguous payment and have the retry run. A context shared by runs blocks only the runs that
 * saw its calls, and keeps its newest `PER_SCOPE` (another run there is another conversation). Past
 * `MAX_REMEMBERED` in all, the oldest conversation's go first, so memory stays bounded.
 */
const PER_SCOPE = 1000
const MAX_REMEMBERED = 10_000
/** A full conversation re-reads this many of its oldest calls per new call: an operator's settlement frees room. */
const REREAD = 8

/** Classes whose repeat is harmless are not held: a read, or an idempotent mutation. */
const REPEATABLE = new Set(["read", "idempotent_mutate"])

export type RetryVerdict = { readonly kind: "run" } | { readonly kind: "return"; readonly result: unknown }

/** One call as the memory sees it: its conversation, node and arguments, and its own tool-call id. */
export interface HeldCall {
  readonly scope: string
  readonly key: string
  readonly toolCallId: string
  /**
   * Whether the model that made this call was shown the call `toolCallId` (it is in the call's messages). Given
   * when the conversation is an object the application may share between runs (the AI SDK's
   * `experimental_context`): an earlier call this model never saw is another conversation's.
   */
  readonly saw?: (toolCallId: string) => boolean
}

const memories = new WeakMap<object, Map<string, FailedCalls>>()

/**
 * The memory of one tool's failed calls on one ledger: shared by every guarded copy of the tool (a tool set built
 * per request, two ToolNodes), since they are all one ledger key space.
 */
export function failedCallsOf(ledger: unknown, tool: string): FailedCalls {
  if (typeof ledger !== "object" || ledger === null) return new FailedCalls(tool)
  const tools = memories.get(ledger) ?? new Map<string, FailedCalls>()
  const failed = tools.get(tool) ?? new FailedCalls(tool)
  memories.set(ledger, tools.set(tool, failed))
  return failed
}

/** One conversation's failed calls: by node and arguments, each key with its calls in the order they failed. */
interface Scope {
  readonly calls: Map<string, Earlier[]>
  size: number
}

/** The failed calls of one guarded tool, by conversation, then node and arguments. */
export class FailedCalls {
  // Conversations in the order of their last failure.
  readonly #scopes = new Map<string, Scope>()
  // Calls that passed their check and have not ended, by conversation: a step's parallel calls all pass the check
  // before any fails, and uncounted they would fill a conversation, then the tool's whole memory, past its bound.
  readonly #inFlight = new Map<string, number>()
  #size = 0
  readonly #tool: string

  constructor(tool: string) {
    this.#tool = tool
  }

  /**
   * The call as held, or null when it is not: no conversation or tool-call id, a repeatable class, odd arguments.
   * The conversation is the call's thread id, else `run`: an object the framework hands every call of one run.
   */
  held(
    meta: CallMeta,
    args: unknown,
    sideEffectClass: string | undefined,
    run?: unknown,
    saw?: (toolCallId: string) => boolean,
  ): HeldCall | null {
    const { toolCallId } = meta
    const scope = meta.threadId ? `thread:${meta.threadId}` : runScope(run)
    if (!scope || !toolCallId || !sideEffectClass || REPEATABLE.has(sideEffectClass)) return null
    const key = keyOf([meta.node ?? "", args])
    if (key === undefined) return null
    return { scope, key, toolCallId, ...(!meta.threadId && saw && { saw }) }
  }

  /**
   * A call whose body started has failed, or was given up on while it still runs (`running`): a later call with a
   * new id and the same key is checked against it.
   */
  remember(call: HeldCall, requestId: string, running = false): void {
    const scope = this.#scopes.get(call.scope) ?? { calls: new Map<string, Earlier[]>(), size: 0 }
    this.#scopes.delete(call.scope)
    this.#scopes.set(call.scope, scope)
    // Several per key: one `experimental_context` may be shared by runs that each fail with the same arguments.
    const earlier = scope.calls.get(call.key) ?? []
    scope.calls.delete(call.key)
    const now = [
      ...earlier.filter((e) => e.toolCallId !== call.toolCallId),
      {
        key: call.key,
        requestId,
        toolCallId: call.toolCallId,
        ...(running && { running: true as const }),
      },
    ]
    scope.calls.set(call.key, now)
    this.#adjust(call.scope, scope, now.length - earlier.length)
    // A full context shared by runs takes the call of a run that saw none of it: the oldest makes room, or one user
    // sending many short runs would push the tool's memory to its bound and every other conversation out of it.
    if (call.saw && scope.size > PER_SCOPE) this.#dropOldest(call.scope, scope)
    if (this.#size > MAX_REMEMBERED) {
      const [name, oldest] = this.#scopes.entries().next().value as [string, Scope]
      this.#dropOldest(name, oldest)
    }
  }

  /**
   * A call succeeded (a retry that ran, a resumed call): its own failure, if any, is settled. The others of its key
   * stay: its check settled those it ran after, so the ones left failed beside it (a twin in the same step, another
   * run on the thread) while their model was told they failed, and their retry is still their intent. So does
   * its own id when another run waited on it and gave up (`running`): that run's model was told it failed. Unless
   * `settled`: the row says it never ran its effect, which settles it for every run.
   */
  forget(call: HeldCall, settled = false): void {
    this.#remove(call.scope, call.key, (e) => e.toolCallId === call.toolCallId && (settled || !e.running))
  }

  /**
   * Before a call runs: `run` when no earlier call of the same key may have taken effect; `return` with the earlier
   * call's result once it completed (an operator said so, or its late completion landed); a hard block while the
   * earlier call's outcome is unknown. An earlier call still running here is waited for (until `signal` aborts or
   * the ledger's poll timeout). A ledger outage here propagates: nothing runs blind. A call let `run` counts as
   * running in its conversation until its caller says otherwise (`running(call, -1)`, as `runHeld` does).
   */
  async check(ledger: unknown, call: HeldCall, signal?: AbortSignal): Promise<RetryVerdict> {
    const { toolCallId, saw } = call
    const reader = ledger as Partial<RowReader>
    const all = this.#scopes.get(call.scope)?.calls.get(call.key) ?? []
    const earlier = all.filter((e) => e.toolCallId !== toolCallId && (!saw || saw(e.toolCallId))).reverse()
    for (const e of earlier) {
      // The body still runs (its framework timed it out): wait for its outcome as a redispatch waits for the call
      // in flight, rather than running the effect beside it.
      const row =
        e.running && reader.waitForTransition
          ? await reader.waitForTransition(e.requestId, { signal })
          : await reader.get?.(e.requestId)
      // This retry's framework gave up on it while it read (the model was told it failed): it settles nothing, or
      // the earlier call's next retry would find nothing held and run.
      throwIfAborted(signal)
      const completed = row?.terminalOutcome === "COMPLETED"
      // Completed without its result stored: the retry is told so, as the call was, and runs nothing.
      if (completed) throwIfUnstorable(row as Row)
      if (completed || notRun(row)) {
        this.#remove(call.scope, call.key, (x) => x.requestId === e.requestId)
        // The retry gets the outcome it asked for; a call after it is a new intent.
        if (completed) return { kind: "return", result: row?.result }
        continue
      }
      throw new LedgerHardBlockError(
        `Tool '${this.#tool}' already ran with these arguments in this conversation (tool call ` +
          `${clip(e.toolCallId)}) and may have taken effect (${clip(String(row?.terminalOutcome))}, boundary ` +
          `${clip(String(row?.sideEffectBoundary))}). Do not call it again. An operator must settle request ` +
          `'${clip(e.requestId)}' first (mycelium transitions release ID --verified completed|not-executed).`,
      )
    }
    // A full conversation re-reads its `REREAD` oldest calls that a settlement could still free, and drops those
    // settled as not run. One settled as completed stays (its retry gets its result) and is passed over from then
    // on: else a full conversation whose oldest calls had all run could never make room.
    const scope = this.#scopes.get(call.scope)
    if (scope && this.#full(call)) {
      const open = [...scope.calls.values()].flat().filter((e) => !e.running && !e.completed)
      for (const e of open.slice(0, REREAD)) {
        const row = await reader.get?.(e.requestId)
        if (notRun(row)) this.#remove(call.scope, e.key, (x) => x === e)
        else if (row?.terminalOutcome === "COMPLETED") e.completed = true
      }
    }
    // Decided and counted in one synchronous step, so calls made side by side each see the others.
    if (this.#full(call)) {
      throw new LedgerHardBlockError(
        `Tool '${this.#tool}' takes no new call in this conversation: ${PER_SCOPE} of its calls may have taken ` +
          "effect. Release those that did not run (mycelium transitions list --stuck) or start a new conversation.",
      )
    }
    this.running(call, 1)
    return { kind: "run" }
  }

  /** Counts a call `check` let run (`1`), and no more (`-1`) once it ended or was given up on and remembered. */
  running({ scope }: HeldCall, n: 1 | -1): void {
    const now = n + (this.#inFlight.get(scope) ?? 0)
    if (now) this.#inFlight.set(scope, now)
    else this.#inFlight.delete(scope)
  }

  /**
   * Whether `call`'s conversation has no room: its remembered and running calls. In a context shared by runs, only
   * for a run that saw some of them.
   */
  #full({ scope: name, saw }: HeldCall): boolean {
    const scope = this.#scopes.get(name)
    if ((scope?.size ?? 0) + (this.#inFlight.get(name) ?? 0) < PER_SCOPE) return false
    return !saw || [...(scope?.calls.values() ?? [])].flat().some((e) => saw(e.toolCallId))
  }

  /** Removes the failed calls of conversation `name` and `key` that `which` selects. */
  #remove(name: string, key: string, which: (e: Earlier) => boolean): void {
    const scope = this.#scopes.get(name)
    const earlier = scope?.calls.get(key)
    if (!scope || !earlier) return
    const kept = earlier.filter((e) => !which(e))
    if (kept.length) scope.calls.set(key, kept)
    else scope.calls.delete(key)
    this.#adjust(name, scope, kept.length - earlier.length)
  }

  /** The oldest failed call of a conversation goes. */
  #dropOldest(name: string, scope: Scope): void {
    const [first] = scope.calls.values().next().value as [Earlier]
    this.#remove(name, first.key, (e) => e === first)
  }

  /** Counts `delta` more (or fewer) failed calls in conversation `name`; an empty conversation goes. */
  #adjust(name: string, scope: Scope, delta: number): void {
    scope.size += delta
    this.#size += delta
    if (scope.size === 0) this.#scopes.delete(name)
  }
}

/**
 * Runs one guarded call under the memory: checks it first, forgets its own failure when it succeeds, remembers it
 * when it fails after its body started (`started()` gives the request id then), or after waiting on the same call
 * running elsewhere (a poll timeout, an abort while it polled) or finding it ambiguous: the model is told this call
 * failed either way, and its retry must be held by that row too. A call whose `signal` aborts while its body runs is
 * remembered at once, and stays remembered when it then succeeds: the framework has told the model it failed, so a
 * retry gets this call's result instead of a second run. `replayed` turns an earlier call's stored result into what
 * the framework expects (as stored, by default). `meta` is the meta `call` passes to the ledger.
 */
export async function runHeld<R>(
  failed: FailedCalls,
  held: HeldCall | null,
  ledger: unknown,
  started: () => string | null,
  call: () => Promise<R>,
  meta: CallMeta,
  replayed: (stored: unknown) => R | Promise<R> = (stored) => stored as R,
): Promise<R> {
  // Without the ledger's get() (a RemoteLedger) the earlier row cannot be read: nothing is held or remembered.
  // Awaited, not returned: a call the ledger refuses at once (an aborted signal) is a promise already rejected, which
  // workerd reports as uncaught when an async function hands it back.
  if (!held || typeof (ledger as Partial<RowReader>).get !== "function") return await call()
  const { signal } = meta
  // The request id of this call's own row, once the ledger has checked it is (a call whose body did not start).
  let waited: string | undefined
  ;(meta as KeyedMeta)[onKeyed] = (id) => {
    waited = id
  }
  const earlier = await failed.check(ledger, held, signal)
  if (earlier.kind === "return") return await replayed(earlier.result)
  let abandoned = false
  // Before the body began, an abort keeps it from starting (the ledger checks the signal once it has claimed);
  // after, the body runs on and a retry waits for it. A call that only waited on its own row (the body runs
  // elsewhere) is held by that row from the abort on too: the framework tells the model at once (OpenAI Agents races
  // its timeout), and the retry may come before this call unwinds.
  const abandon = () => {
    const requestId = started() ?? waited
    if (requestId === undefined) return
    abandoned = true
    failed.remember(held, requestId, true)
    failed.running(held, -1)
  }
  const off = signal && onAbort(signal, abandon)
  try {
    const out = await call()
    // Given up on, the call stays remembered (a retry reads its completed row); re-adding it here could bring back
    // an entry a retry has already settled.
    if (!abandoned) failed.forget(held)
    return out
  } catch (err) {
    const ran = started()
    const requestId = ran ?? waited
    if (requestId !== undefined) {
      // A failure before the side effect is settled, given up on or not: keeping it would only fill the
      // conversation's room. A row that cannot be read (an outage) may have taken effect.
      const row = await (ledger as RowReader).get(requestId).catch(() => undefined)
      if (row && notRun(row)) failed.forget(held, true)
      // Still running elsewhere (this call only waited for it): a retry waits for it too.
      else failed.remember(held, requestId, ran === null && row?.terminalOutcome === "IN_FLIGHT")
    }
    throw err
  } finally {
    off?.()
    if (!abandoned) failed.running(held, -1)
  }
}

/** Whether an earlier call's row says it never ran its effect: none, released as not run, or failed before. */
function notRun(row: Row | null | undefined): boolean {
  return (
    !row ||
    row.operatorResolution === "not_executed" ||
    (row.terminalOutcome === "FAILED_BEFORE_EFFECT" && row.sideEffectBoundary === "not_crossed")
  )
}

/** The normalized side-effect class of a ledgered call (`ActionLedger` and `RemoteLedger` both expose it). */
export function sideEffectClassOf(call: unknown): string | undefined {
  return (call as { binding?: { sideEffectClass?: string } | null }).binding?.sideEffectClass
}

const runIds = new WeakMap<object, number>()
let nextRunId = 0

/** A run object's id in this process (held weakly: the memory never keeps a finished run's object alive). */
function runScope(run: unknown): string | null {
  if (typeof run !== "object" || run === null) return null
  const id = runIds.get(run) ?? ++nextRunId
  runIds.set(run, id)
  return `run:${id}`
}

/**
 * JSON with sorted keys, or undefined for what JSON cannot hold (a cycle). A bigint is written as the ledger's
 * fingerprint reads it (a number within 2^53): a retry the ledger would key alike is held alike. (The ledger's own
 * canonical JSON would do, at 1 KB more in each integration's bundle.)
 */
/**
 * Keys longer than this are kept as their SHA-256: up to `MAX_REMEMBERED` whole argument texts per tool (an email
 * body each) held hundreds of MB for the ledger's life. Shorter ones stay as text (no hashing on the common path);
 * a JSON text starts with `[`, so the two never meet.
 */
const KEY_AS_TEXT = 256

function keyOf(v: unknown): string | undefined {
  const text = keyText(v)
  return text === undefined || text.length <= KEY_AS_TEXT ? text : `#${sha256Hex(text)}`
}

function keyText(v: unknown): string | undefined {
  try {
    return JSON.stringify(v, (_k, value: unknown) => {
      if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : `${value}n`
      return value && typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, (value as Record<string, unknown>)[k]]),
          )
        : value
    })
  } catch {
    return undefined
  }
}
