// `mycelium-runtime/client`: ledgered tools whose ledger is the edge API. Fetch only (no hono, no zod): it runs in
// browser tabs, workers and any runtime with fetch. The server runs the state machine; this client holds a secret
// lease per call and moves only that call's row. Happy path: 2 round trips (begin, complete), 3 with sideEffect(),
// 1 for a replay.
import { InvalidOptionError } from "../core/errors.ts"
import { renewEvery, throwIfAborted, timerMs } from "../core/ledger/clock.ts"
import type { LedgeredToolOptions, TransitionContext } from "../core/ledger/engine/tool.ts"
import {
  LedgerError,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  LedgerPollTimeoutError,
  LedgerResultUnstorableError,
  LedgerSoftBlockError,
  LedgerStorageUnavailableError,
  type UnstorableReason,
} from "../core/ledger/errors.ts"
import { errorText } from "../core/ledger/machine/transitions.ts"
import { ToolTransitionBinding } from "../core/ledger/model/binding.ts"
import { argumentsStoredAndKeyed, type JsonValue, toJsonValue } from "../core/ledger/model/canonical.ts"
import type { SideEffectBoundary } from "../core/ledger/model/enums.ts"
import type { CallMeta } from "../core/ledger/model/identity.ts"
import type { ToolArgs } from "../core/ledger/model/tool-arguments.ts"
import { secondsProblem } from "../core/seconds.ts"
import { apiBaseUrl } from "../core/storage/api-url.ts"
import { jsonDepth } from "../core/storage/limits.ts"
import { DEFAULT_MAX_RESPONSE_BYTES, readLimited } from "../core/storage/read-limited.ts"
import {
  bearer,
  isRedirect,
  requestFailure,
  requestSignal,
  requestTimeoutOption,
  serverCode,
  serverText,
} from "../core/storage/request-timeout.ts"
import { MAX_ERROR_TEXT, storableText } from "../core/storage/text.ts"
import { checkBeginAnswer, positive, type RunAnswer } from "./begin-answer.ts"
import { forgedReleaseAt, unstorableAt } from "./storable.ts"

export interface RemoteLedgerOptions {
  /** Base URL of the ledger API (its basePath included), e.g. `https://ledger.example.com`. */
  readonly baseUrl: string
  /** A `ledger:agent` JWT, or a function returning a fresh one per request. */
  readonly token?: string | (() => string | Promise<string>)
  readonly fetch?: typeof fetch
  /** Seconds a call's lease lasts (the server caps it). Default: the server's (60). */
  readonly leaseTtl?: number
  /** Seconds between automatic renewals while a body runs. Default `leaseTtl / 3`; `<= 0` disables. */
  readonly leaseRenewInterval?: number
  /** Seconds a call waits for another worker's in-flight call before `LedgerPollTimeoutError`. Default 300. */
  readonly pollTimeout?: number | null
  /** Where warnings go. Default `console.warn`. */
  readonly onWarning?: (message: string) => void
  /** Largest answer read from the API, in bytes (a replay carries the stored result). Default 64 MiB. */
  readonly maxResponseBytes?: number
  /**
   * Seconds to wait for each whole answer of the API (headers and body); then the call fails closed with
   * `LedgerStorageUnavailableError`. Default 30; `null` waits forever.
   */
  readonly requestTimeout?: number | null
}

/** The ledger API refused a request with a code this client has no class for. */
export class RemoteLedgerError extends LedgerError {
  override readonly name = "RemoteLedgerError"
  override readonly code: string
  readonly status: number
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

export type RemoteToolBody<A, R> = (args: A, tx: RemoteTransitionContext) => Promise<R> | R

export interface RemoteTool<A, R> {
  (args: A, meta?: CallMeta): Promise<R>
  readonly toolName: string
  readonly binding: ToolTransitionBinding | null
  readonly ledger: RemoteLedger
}

function errorFor(status: number, code: string, text: string, tool: string): Error {
  // The server's text, bounded and without controls: a tool's error reaches logs and the model (a blocked answer's
  // and a refusal's message were passed on whole, 60 MB or terminal escapes included).
  const message = serverText(text)
  switch (code) {
    case "ledger_outcome_already_set":
      return new LedgerOutcomeAlreadySetError(message)
    case "args_drift":
      return new LedgerIdentityConflictError(message, tool)
    case "ledger_hard_block":
      return new LedgerHardBlockError(message)
    case "ledger_soft_block":
      return new LedgerSoftBlockError(message)
    case "ledger_storage_unavailable":
      return new LedgerStorageUnavailableError(message)
    case "ledger_result_unstorable": {
      const limit = /\[(not_serializable|max_depth|max_row_bytes)\]/.exec(message)?.[1] ?? "not_serializable"
      return new LedgerResultUnstorableError(message, limit as UnstorableReason)
    }
    default:
      return new RemoteLedgerError(status, serverCode(code), message)
  }
}

/**
 * A seconds option checked as ActionLedger checks it: NaN, what Number() gives an unset environment variable, made
 * polls that never time out (and busy ones), and a renewal interval that renewed nothing.
 */
function secs<T extends number | null | undefined>(name: string, v: T, min?: number, infinite?: boolean): T {
  const problem = v == null ? null : secondsProblem(name, v, min, infinite)
  if (problem) throw new InvalidOptionError(problem)
  return v
}

/** A lease: the server takes lease_ttl > 0 only (ActionLedger's 0, a lease that never lapses, has no API form). */
function ttl(v: number | undefined): number | undefined {
  if (secs("leaseTtl", v) === undefined || (v as number) > 0) return v
  throw new InvalidOptionError(`leaseTtl must be a number of seconds > 0, got ${v}`)
}

// A signal that aborted during the poll request rejects at once (it fires no event again: the call polled on), and the
// listener goes when the wait ends (one per poll piled up on a framework's per-step signal). Not the core's onAbort:
// this bundle is at its size budget.
const sleep = (seconds: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    throwIfAborted(signal)
    const stop = () => {
      clearTimeout(t)
      reject(signal?.reason)
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", stop)
      resolve()
    }, timerMs(seconds))
    signal?.addEventListener("abort", stop, { once: true })
  })

function bindingWire(b: ToolTransitionBinding): Record<string, unknown> {
  const w: Record<string, unknown> = {
    agent_id: b.agentId,
    policy_version: b.policyVersion,
    side_effect_class: b.sideEffectClass,
    retry_permission: b.retryPermission,
    side_effect_boundary_default: b.sideEffectBoundaryDefault,
    spendability: b.spendability,
  }
  if (Object.keys(b.scopeFrom).length) w.scope_from = b.scopeFrom
  if (b.explicitCapability) w.capability = b.explicitCapability
  if (b.providerIdempotencyKeyParam) w.provider_idempotency_key_param = b.providerIdempotencyKeyParam
  if (b.providerIdempotencyKeyTtl) w.provider_idempotency_key_ttl = b.providerIdempotencyKeyTtl
  if (b.requestIdFrom) w.request_id_from = b.requestIdFrom
  return w
}

/** The metadata sent, each in snake case on the wire (`toolCallId`: `tool_call_id`). */
const META_WIRE: ReadonlyArray<keyof CallMeta> = [
  "requestId",
  "toolCallId",
  "threadId",
  "runId",
  "node",
  "stateRef",
  "decisionId",
  "parentRequestId",
  "handoffId",
]

/** What a call's context needs from its ledger: one JSON round trip, and where warnings go. */
interface Transport {
  post<T>(path: string, body: string, tool: string): Promise<T>
  warn(message: string): void
}

/** A ledger whose rows live behind the edge API. `tool(options, fn)` is ActionLedger's, over HTTP. */
export class RemoteLedger {
  readonly #base: string
  readonly #token: RemoteLedgerOptions["token"]
  readonly #fetch: typeof fetch
  readonly leaseTtl: number | undefined
  readonly leaseRenewInterval: number | undefined
  readonly pollTimeout: number | null
  readonly #onWarning: (message: string) => void
  readonly #maxResponseBytes: number
  readonly #requestTimeout: number | null
  readonly #transport: Transport = {
    post: (path, body, tool) => this.#post(path, body, tool),
    warn: (message) => this.#onWarning(message),
  }

  constructor(options: RemoteLedgerOptions) {
    this.#token = options.token
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    this.leaseTtl = ttl(options.leaseTtl)
    this.leaseRenewInterval = secs("leaseRenewInterval", options.leaseRenewInterval)
    this.pollTimeout =
      options.pollTimeout === undefined ? 300 : secs("pollTimeout", options.pollTimeout, 0, true)
    this.#onWarning = options.onWarning ?? ((m) => console.warn(`[mycelium] ${m}`))
    // Checked here: a missing baseUrl threw a bare TypeError, and a NaN limit capped nothing.
    const max = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    this.#base = apiBaseUrl("baseUrl", options.baseUrl)
    if (!(Number.isInteger(max) && max > 0))
      throw new InvalidOptionError(`maxResponseBytes must be a whole number >= 1, got ${max}`)
    this.#maxResponseBytes = max
    this.#requestTimeout = requestTimeoutOption(options.requestTimeout)
  }

  /** One JSON round trip; any transport failure fails closed as a storage outage. */
  async #post<T>(path: string, body: string, tool: string): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" }
    let res: Response
    let json: unknown
    try {
      const signal = requestSignal(this.#requestTimeout)
      const auth = await bearer(this.#token, signal)
      if (auth) headers.authorization = auth
      // Each wait races the deadline: a fetch that ignores its signal (an in-process one, a polyfill) held the call
      // forever on headers or a body that never came.
      const cut = new Promise<never>((_, reject) =>
        signal?.addEventListener("abort", () => reject(signal.reason)),
      )
      cut.catch(() => undefined)
      res = await Promise.race([
        this.#fetch(`${this.#base}${path}`, {
          method: "POST",
          headers,
          body,
          // Followed, a 303 turns the claim into a GET and a 307 sends the arguments to another origin.
          redirect: "manual",
          ...(signal ? { signal } : {}),
        }),
        cut,
      ])
      if (isRedirect(res))
        throw new Error(
          `it answered a redirect (${res.status}), not followed: set baseUrl to where the API is`,
        )
      // Read through a pipe under the signal, so the deadline cancels the body too (readLimited locks it: a
      // stream.cancel() from here is refused); the pipe keeps its own rejections handled.
      const bytes = await Promise.race([
        readLimited(
          { headers: res.headers, body: res.body?.pipeThrough(new TransformStream(), { signal }) ?? null },
          this.#maxResponseBytes,
        ),
        cut,
      ])
      if (bytes === null)
        throw new Error(`its answer is over ${this.#maxResponseBytes} bytes (maxResponseBytes)`)
      json = JSON.parse(responseDecoder.decode(bytes))
    } catch (e) {
      throw new LedgerStorageUnavailableError(
        `ledger API unreachable at ${this.#base}: ${requestFailure(e, this.#requestTimeout)}`,
        { cause: e },
      )
    }
    if (!res.ok) {
      const err = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error
      const code = serverCode(err?.code)
      const message = typeof err?.message === "string" ? err.message : `HTTP ${res.status}`
      // A 5xx with no code of the API's own (a gateway's, or the server's internal_error, its bug): whether the
      // request took effect is unknown, as in an outage. A RemoteLedgerError there read as a refusal, and a model
      // told the completion failed called again under a new id: a second payment.
      const outage = res.status >= 500 && /^(http|internal)_error$/.test(code)
      throw errorFor(
        res.status,
        outage ? "ledger_storage_unavailable" : code,
        outage ? `ledger API failed (HTTP ${res.status}): ${message}` : message,
        tool,
      )
    }
    return json as T
  }

  tool<A extends object, R>(
    options: LedgeredToolOptions,
    fn: RemoteToolBody<ToolArgs<A>, R>,
  ): RemoteTool<A, R> {
    if (!options.name) throw new InvalidOptionError("ledger.tool() needs a name: pass options.name")
    const binding = options.binding ? ToolTransitionBinding.from(options.binding) : null
    const tool = options.name
    const leaseTtl = ttl(options.leaseTtl) ?? this.leaseTtl
    // Kept: read at each poll, a NaN set later turned the server's hint into a busy loop.
    const pollInterval = secs("pollInterval", options.pollInterval, 0)
    const pollTimeout =
      options.pollTimeout === undefined ? this.pollTimeout : secs("pollTimeout", options.pollTimeout, 0, true)
    const wireBinding = binding ? bindingWire(binding) : undefined

    const call = async (args: A, meta: CallMeta = {}): Promise<R> => {
      throwIfAborted(meta.signal)
      const wireMeta: Record<string, string> = {}
      for (const k of META_WIRE) {
        const v = meta[k]
        if (typeof v === "string") wireMeta[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v
      }
      const begin = `{"args":${argsJson(args)},${JSON.stringify({
        tool,
        ...(wireBinding ? { binding: wireBinding } : {}),
        meta: wireMeta,
        ...(leaseTtl !== undefined ? { lease_ttl: leaseTtl } : {}),
      }).slice(1)}`
      // The id the answer must name: the caller's requestId, or an unbound tool's toolCallId. A bound tool's id is
      // the server's to derive (a SHA-256 this client leaves out to stay small): see docs/http-api.md.
      const expected = wireMeta.request_id ?? (binding ? undefined : wireMeta.tool_call_id)
      // On the monotonic clock: a wall clock stepped back an hour polled an hour longer (one stepped forward, not
      // at all).
      const deadline = pollTimeout === null ? Infinity : performance.now() + pollTimeout * 1000
      for (;;) {
        const sent = clocks()
        const a = checkBeginAnswer(await this.#post<unknown>("/v1/calls", begin, tool), expected, leaseTtl)
        if (a.status === "replay") return a.result as R
        if (a.status === "blocked") throw errorFor(409, a.error.code, a.error.message, tool)
        if (a.status === "poll") {
          const left = (deadline - performance.now()) / 1000
          if (left <= 0) throw new LedgerPollTimeoutError(`Timed out polling in-flight '${tool}' call`)
          await sleep(Math.min(pollInterval ?? a.retry_after, left), meta.signal)
          continue
        }
        const tx = new RemoteCall(this.#transport, tool, a, meta.signal, sent)
        tx.startAutoRenew(this.leaseRenewInterval)
        let result: R
        try {
          // As ActionLedger: a caller that gave up during the claim gets no body started behind its back.
          throwIfAborted(meta.signal)
          result = await (fn as RemoteToolBody<A, R>)(args, tx)
        } catch (err) {
          await tx.stop()
          await tx.recordFailure(err)
          throw err
        }
        await tx.stop()
        try {
          await tx.complete(result)
        } catch (e) {
          if (!(e instanceof LedgerOutcomeAlreadySetError)) throw e
          this.#onWarning(`tool result discarded for '${tool}' request '${a.request_id}': ${e.message}`)
        }
        return result
      }
    }
    return Object.assign(call, { toolName: tool, binding, ledger: this })
  }
}

/**
 * The arguments as JSON the server reads back exactly (docs/keys.md): an integer beyond 2^53 as its digits, a kept
 * float and -0 as floats, so the server keys the call as `ledger.tool()` does. JSON.stringify
 * cannot write them: each goes out as a NUL-marked string, unquoted afterwards unless an argument holds NUL itself
 * (refused by the server anyway, so no argument is ever taken for a marker).
 */
function argsJson(args: unknown): string {
  let marked = false
  let nul = false
  const text = JSON.stringify(argumentsStoredAndKeyed(args).keyed, (k, v: unknown) => {
    if ((typeof v === "string" && v.includes("\0")) || k.includes("\0")) nul = true
    // An integral number from 2^53 to 1e21 keys by its exact digits (canonicalNumber), not JSON's shortest form.
    let exact =
      typeof v === "bigint"
        ? `${v}`
        : Object.is(v, -0)
          ? "-0.0"
          : Number.isInteger(v) && !Number.isSafeInteger(v) && Math.abs(v as number) < 1e21
            ? `${BigInt(v as number)}`
            : ""
    if (v instanceof Number && Number.isFinite(+v)) exact = /[.e]/.test(`${v}`) ? `${v}` : `${v}.0`
    if (!exact) return v
    marked = true
    return `\0${exact}`
  })
  return marked && !nul ? text.replace(/"\\u0000([^"]*)"/g, "$1") : text
}

const encoder = /* @__PURE__ */ new TextEncoder()
const responseDecoder = /* @__PURE__ */ new TextDecoder()
let never: AbortSignal | null = null

/**
 * Now by both clocks, in ms. A lease lapses by whichever passes its end first: the wall clock can be stepped back (an
 * NTP step, a user) and then kept a lease the server had ended, so an answer that came back late started the effect
 * beside a redispatch; the monotonic one (performance.now(), in every runtime) stops while the machine sleeps.
 */
type Clocks = readonly [wall: number, monotonic: number]
const clocks = (): Clocks => [Date.now(), performance.now()]
const after = (at: Clocks, seconds: number): Clocks => [at[0] + seconds * 1000, at[1] + seconds * 1000]

/**
 * What a remote tool body gets: the same boundary helpers as the local `TransitionContext` (one round trip each),
 * without the stored row, which stays on the server.
 */
export type RemoteTransitionContext = Omit<TransitionContext, "entry">

/** One owned call: the context its body sees, plus the lifecycle the wrapper drives (renewal, completion). */
class RemoteCall implements RemoteTransitionContext {
  readonly #ledger: Transport
  readonly #tool: string
  readonly #claim: RunAnswer
  readonly #path: string
  #boundary: SideEffectBoundary
  #chain: Promise<unknown> = Promise.resolve()
  #stopRenew: (() => void) | null = null
  /**
   * The earliest the lease can lapse, by each clock: the claim's or last renewal's lease from when it was asked for
   * (the server stamps it when it writes, and its answer may come back late).
   */
  #until: Clocks
  readonly signal: AbortSignal

  constructor(
    ledger: Transport,
    tool: string,
    claim: RunAnswer,
    signal: AbortSignal | undefined,
    sent: Clocks,
  ) {
    this.#ledger = ledger
    this.#tool = tool
    this.#claim = claim
    this.#path = `/v1/calls/${encodeURIComponent(claim.request_id)}`
    this.#boundary = claim.side_effect_boundary
    this.#until = after(sent, claim.lease_ttl)
    never ??= new AbortController().signal
    this.signal = signal ?? never
  }

  get requestId(): string {
    return this.#claim.request_id
  }
  get fence(): number {
    return this.#claim.fence
  }

  #send(
    op: string,
    extra: Record<string, unknown>,
    body = JSON.stringify({ fence: this.#claim.fence, lease: this.#claim.lease, ...extra }),
  ): Promise<{ at: Clocks; lease_ttl?: unknown }> {
    const run = this.#chain.then(async () => {
      const at = clocks()
      const a = await this.#ledger.post<{
        request_id?: unknown
        fence?: unknown
        terminal_outcome?: unknown
        lease_ttl?: unknown
      }>(`${this.#path}/${op}`, body, this.#tool)
      // Any 200 was taken as done: a proxy's `{}` for a boundary write let sideEffect() pay with maybe_crossed never
      // stored, and a redispatch paid again. The answer must be this call's state, at its fence, as the write left it.
      // After a failure, one of the three outcomes fail() writes (a proxy's answer without one counted as recorded).
      const want =
        op === "complete"
          ? ["COMPLETED"]
          : op === "fail"
            ? ["FAILED_BEFORE_EFFECT", "FAILED_AFTER_EFFECT", "UNKNOWN"]
            : ["IN_FLIGHT"]
      if (
        a?.request_id !== this.requestId ||
        a.fence !== this.#claim.fence ||
        !want.includes(a.terminal_outcome as string)
      )
        throw new LedgerStorageUnavailableError(
          `the ledger API answered ${op} of '${this.requestId}' with another state than the call's: not stored`,
        )
      return { at, lease_ttl: a.lease_ttl }
    })
    this.#chain = run.catch(() => undefined)
    return run
  }

  /**
   * `maybe_crossed` is durable before `fn` runs: a crash inside it leaves the call UNKNOWN, never re-run. Written on
   * every call, as ActionLedger's: a late owner's second effect (a retry) ran with no write after a release.
   */
  async sideEffect<T>(fn: () => Promise<T> | T): Promise<T> {
    await this.#start()
    const out = await fn()
    this.#boundary = "crossed"
    return out
  }

  async markMaybeCrossed(): Promise<void> {
    if (this.#boundary === "maybe_crossed" || this.#boundary === "crossed") return
    await this.#start()
  }

  async #start(): Promise<void> {
    await this.#send("boundary", { boundary: "maybe_crossed" })
    if (this.#boundary === "not_crossed") this.#boundary = "maybe_crossed"
    // The server checked the lease when it wrote; an answer that came back after it lapsed (a slow network, a pause)
    // must not start the effect: the row may be released not_executed by then and run elsewhere. In workerd both
    // clocks move only on I/O: read just after the answer, they are as late as it is.
    const now = clocks()
    if (now[0] >= this.#until[0] || now[1] >= this.#until[1])
      throw new LedgerLeaseError(
        `Cannot start the effect of request '${this.requestId}': lease already expired — reconcile instead`,
      )
  }

  async markCrossed(): Promise<void> {
    await this.#send("boundary", { boundary: "crossed" })
    this.#boundary = "crossed"
  }

  /** Stores the provider's handle (payment intent id, message id) for reconciliation. */
  async recordExternalOperation(ref: string): Promise<void> {
    await this.#send("boundary", { external_operation_ref: String(ref) })
  }

  /** Renews by `leaseTtl`, by default the call's own lease (the server's default may be shorter). */
  async renewLease(leaseTtl: number = this.#claim.lease_ttl): Promise<void> {
    // From when it was sent, by the lease the server granted: its maxLeaseTtl caps the one asked for. No lease_ttl (a
    // server older than it): the one asked for. One that is not a positive number (-1) grants none: the lease ends
    // when the renewal was sent (it counted as the one asked for, and sideEffect() ran past the server's lapse).
    const { at, lease_ttl } = await this.#send("renew", { lease_ttl: leaseTtl })
    this.#until = after(
      at,
      Math.min(leaseTtl, lease_ttl === undefined ? leaseTtl : positive(lease_ttl) ? lease_ttl : 0),
    )
  }

  startAutoRenew(interval: number | undefined): void {
    // Every third of the lease, sooner if the client asks: a tool's lease shorter than the client's interval lapsed
    // mid-body and a redispatch took the call over.
    const third = this.#claim.lease_ttl / 3
    const every = interval === undefined ? third : Math.min(interval, third)
    if (!(every > 0)) return
    // During an outage each renewal waits out requestTimeout on the serial chain, and stop() waits for the chain: a
    // renewal per tick queued a backlog that held the call up long after its body returned. So one at a time, and
    // none once the lease lapsed by this clock (the server refuses those anyway), as ActionLedger's renewals. By the
    // monotonic clock only: a wall clock stepped forward stopped them and let a live lease lapse; a renewal is no
    // effect (the server judges it), and its answer sets both clocks' reckoning again.
    let busy = false
    // Refused (the claim is gone): stop. A network hiccup: try again next tick.
    this.#stopRenew = renewEvery(
      every,
      async () => {
        if (busy || performance.now() >= this.#until[1]) return
        busy = true
        try {
          await this.renewLease()
        } finally {
          busy = false
        }
      },
      (e) => e instanceof LedgerStorageUnavailableError,
    )
  }

  async stop(): Promise<void> {
    this.#stopRenew?.()
    await this.#chain
  }

  /**
   * The completion; a result over the server's limits is recorded as unstorable instead of being sent
   * (the server would refuse it and leave the row IN_FLIGHT).
   */
  async complete(result: unknown): Promise<void> {
    const { max_body_bytes: maxBytes, max_depth: maxDepth } = this.#claim.limits
    let unstorable: { limit: UnstorableReason; message: string } | null = null
    let json: JsonValue = null
    try {
      json = toJsonValue(result)
    } catch (e) {
      unstorable = { limit: "not_serializable", message: `the result is not JSON (${String(e)})` }
    }
    if (!unstorable && jsonDepth(json, maxDepth) + 1 > maxDepth)
      unstorable = {
        limit: "max_depth",
        message: `the result nests deeper than the API's limit of ${maxDepth}`,
      }
    // What the server refuses in any body (NUL, unpaired surrogates, `__proto__` keys) or in a result (a top-level
    // `operator_release`) it cannot store either.
    const bad = unstorable ? null : (unstorableAt(json, "result") ?? forgedReleaseAt(json, "result"))
    if (bad) unstorable = { limit: "not_serializable", message: bad }
    if (!unstorable) {
      const body = JSON.stringify({ fence: this.#claim.fence, lease: this.#claim.lease, result: json })
      const bytes = body.length * 3 <= maxBytes ? body.length : encoder.encode(body).length
      if (bytes <= maxBytes) {
        await this.#send("complete", {}, body)
        return
      }
      unstorable = {
        limit: "max_row_bytes",
        message: `the result is ${bytes} bytes, over the API's limit of ${maxBytes}`,
      }
    }
    this.#ledger.warn(
      `the result of '${this.#tool}' request '${this.requestId}' was not stored: ${unstorable.message}; replays raise LedgerResultUnstorableError`,
    )
    await this.#send("complete", {
      unstorable: { limit: unstorable.limit, message: storableText(unstorable.message, 1000) },
    })
  }

  /** The server classifies by the stored boundary; this worker can only raise it. */
  async recordFailure(err: unknown): Promise<void> {
    // As the in-process ledger's: a Symbol message or a throwing name threw here, the row stayed in flight for its
    // lease, and the caller got a TypeError instead of its own error.
    const text = errorText(err)
    try {
      await this.#send("fail", { error: storableText(text, MAX_ERROR_TEXT), boundary: this.#boundary })
    } catch (e) {
      const at = `the failure of '${this.#tool}' request '${this.requestId}'`
      // The server wrote the failure, then could not sign its receipt (LedgerReceiptUnsignedError there).
      this.#ledger.warn(
        (e as { code?: unknown }).code === "receipt_unsigned"
          ? `${at} is recorded but its receipt was not signed: ${String(e)}`
          : `could not record ${at}: ${String(e)}`,
      )
    }
  }
}
