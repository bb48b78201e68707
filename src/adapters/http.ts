// A LedgerStorage over the edge API's raw storage routes (createLedgerApp, scope `ledger:store`), for trusted
// backends that run the ledger themselves. Agents (browser tabs, third-party runtimes) use RemoteLedger
// (`mycelium-runtime/client`) instead: a store token can write any row. Atomicity lives on the server.
import {
  type ClaimOptions,
  type ClaimResult,
  entryFromRow,
  entryToRow,
  keepableJson,
  type LedgerEntry,
  LedgerStaleFenceError,
  type LedgerStorage,
  type ListOptions,
  refuseUnkeepableClaim,
  type StorageLimits,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"
import { LedgerConfigError } from "../core/ledger/errors.ts"
import { clip } from "../core/repr.ts"
import { MAX_ID } from "../core/storage/api-ids.ts"
import { apiBaseUrl } from "../core/storage/api-url.ts"
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
import { isUnstorableText, listsNothing, pairHeadOptions, startingWith } from "../core/storage/text.ts"

export interface HttpLedgerStorageOptions {
  /** Base URL of the API, e.g. `https://ledger.example.com` (the app's basePath included). */
  readonly url: string
  /** Bearer token (a JWT with the `ledger:store` scope), or a function that returns a fresh one. */
  readonly token?: string | (() => string | Promise<string>)
  readonly fetch?: typeof fetch
  /** Largest answer read from the API, in bytes (a page of rows). Default 64 MiB. */
  readonly maxResponseBytes?: number
  /**
   * Seconds to wait for each whole answer of the API (headers and body); then the operation fails, and the ledger
   * reports `LedgerStorageUnavailableError`. Default 30; `null` waits forever.
   */
  readonly requestTimeout?: number | null
  /**
   * The API's request body limits, when its app was built with other `limits` than the default (1 MiB, 128 levels).
   * A result the API would refuse completes as unstorable (replays raise `LedgerResultUnstorableError`) instead of
   * failing its completion after the tool ran.
   */
  readonly serverLimits?: { readonly maxBodyBytes?: number; readonly maxDepth?: number }
}

/** The server answered with an error: `code` is the API's stable error code. */
export class LedgerHttpError extends MyceliumError {
  override readonly name = "LedgerHttpError"
  constructor(
    readonly status: number,
    override readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }
}

type Row = Record<string, unknown>

const decoder = /* @__PURE__ */ new TextDecoder()

const CLAIM_OUTCOMES: readonly string[] = ["claimed", "completed", "in_flight"]

/** An answer that is not the storage contract's: fails closed rather than acting on another row or looping. */
const malformed = (what: string, options?: ErrorOptions) =>
  new LedgerHttpError(
    200,
    "invalid_response",
    // `what` may quote the answer (an id, an outcome): bounded, as any text of the server's.
    serverText(`ledger API answered with ${what}; check the API's base URL`),
    options,
  )

/**
 * A row of the answer, read as the ledger's: the shared reader calls String() on text fields, so a field such as
 * `{"toString": 0}` threw a bare TypeError instead of failing closed.
 */
function decoded(row: Row): LedgerEntry {
  try {
    return entryFromRow(row)
  } catch (e) {
    throw malformed("a row the ledger cannot read", { cause: e })
  }
}

/** The row the server answered must be the one asked for: a row of another call is never this call's state. */
function rowOf(raw: unknown, requestId: string): LedgerEntry {
  const got = (raw as Row | null)?.request_id
  if (got !== requestId)
    throw malformed(`a row for ${JSON.stringify(got)} when '${clip(requestId)}' was asked for`)
  return decoded(raw as Row)
}

function rowsOf(raw: unknown): Row[] {
  // A `null` in the list threw a bare TypeError from the row codec.
  if (!Array.isArray(raw) || !raw.every((r) => typeof r === "object" && r !== null))
    throw malformed("rows that are not a list of objects")
  return raw as Row[]
}

// What fits the API's request body: a row is sent wrapped once ({"next": row, "expect": …}), so one level less, and
// 4 KiB under the body's bytes for the wrapper and the payload's snake_case keys.
function rowLimits(server: HttpLedgerStorageOptions["serverLimits"] = {}): StorageLimits {
  const { maxBodyBytes = 1024 * 1024, maxDepth = 128 } = server
  if (!(Number.isInteger(maxBodyBytes) && maxBodyBytes > 4096 && Number.isInteger(maxDepth) && maxDepth > 1))
    throw new InvalidOptionError(
      `serverLimits must be whole numbers, maxBodyBytes > 4096 and maxDepth > 1, got ${maxBodyBytes} and ${maxDepth}`,
    )
  return { validUnicodeOnly: true, maxRowBytes: maxBodyBytes - 4096, maxDepth: maxDepth - 1 }
}

/**
 * Refuses `id`, typed, when it is over the MAX_ID characters the API's routes take: their 400 `invalid_path` (or
 * `invalid_body`) read as an outage, which callers retried forever.
 */
function sendable(id: string, what: string): void {
  if (id.length > MAX_ID)
    throw new LedgerConfigError(
      `${what} '${clip(id)}' is over the ${MAX_ID} characters the ledger API takes; shorten it (nothing was sent)`,
    )
}

/** A row's payload, refused typed as the server would refuse it (a 400 the ledger would read as an outage). */
function rowFor(e: LedgerEntry): Row {
  const row = entryToRow(e)
  keepableJson(JSON.stringify(row), e.requestId)
  return row
}

/** The lease stamps the server kept in place of the ones this process sent, for the claim at `fence`. */
interface Restamp {
  readonly fence: number
  readonly sentLease: number | null
  readonly sentBeat: number | null
  readonly lease: number
  readonly beat: number
}

/**
 * Past this many remembered rows, those whose lease lapsed by the server's clock are dropped. Never a live one: its
 * holder would write its own stamps back, a lease the server may read as lapsed while the effect runs.
 */
const MAX_RESTAMPS = 10_000

/** `next` with the server's stamps where it still carries the ones the server replaced. */
function withServerStamps(next: LedgerEntry, r: Restamp | undefined): LedgerEntry {
  if (r?.fence !== next.fence) return next
  const lease = next.leaseUntil === r.sentLease ? r.lease : next.leaseUntil
  const beat = next.lastHeartbeatAt === r.sentBeat ? r.beat : next.lastHeartbeatAt
  return lease === next.leaseUntil && beat === next.lastHeartbeatAt
    ? next
    : { ...next, leaseUntil: lease, lastHeartbeatAt: beat }
}

export class HttpLedgerStorage implements LedgerStorage {
  /** What the API accepts in a body (it refuses U+0000 and unpaired surrogates for every store). */
  readonly limits: StorageLimits
  readonly #base: string
  readonly #token: HttpLedgerStorageOptions["token"]
  readonly #fetch: typeof fetch
  readonly #maxResponseBytes: number
  readonly #requestTimeout: number | null
  /**
   * The server stamps a renewal's or a re-run's lease with its own clock (src/edge/store-routes.ts); the holder
   * keeps the row it sent, stamped with its own, and writes it whole again (a boundary, its outcome). Sent as they
   * are, those stamps would put back the lease the server replaced.
   */
  readonly #restamps = new Map<string, Restamp>()
  #sweepAt = MAX_RESTAMPS

  constructor(options: HttpLedgerStorageOptions) {
    this.#token = options.token
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
    // Checked here: a missing url threw a bare TypeError, and a NaN limit capped nothing.
    const max = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    this.#base = apiBaseUrl("url", options.url)
    if (!(Number.isInteger(max) && max > 0))
      throw new InvalidOptionError(`maxResponseBytes must be a whole number >= 1, got ${max}`)
    this.#maxResponseBytes = max
    this.#requestTimeout = requestTimeoutOption(options.requestTimeout)
    this.limits = rowLimits(options.serverLimits)
  }

  /** One request; a 200 counts only when it is an object with the route's own field `key`. */
  async #call<T>(
    method: string,
    path: string,
    key: string,
    body?: unknown,
    allow404 = false,
  ): Promise<T | null> {
    const headers: Record<string, string> = { accept: "application/json" }
    if (body !== undefined) headers["content-type"] = "application/json"
    const signal = requestSignal(this.#requestTimeout)
    let res: Response
    let bytes: Uint8Array | null
    try {
      const auth = await bearer(this.#token, signal)
      if (auth) headers.authorization = auth
      res = await this.#fetch(`${this.#base}${path}`, {
        method,
        headers,
        // A followed redirect turns a PUT into a GET (nothing written) or sends the row and token to another origin.
        redirect: "manual",
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      })
      // A broken or hostile server must not fill this process's memory.
      bytes = await readLimited(res, this.#maxResponseBytes)
    } catch (e) {
      throw new LedgerHttpError(
        0,
        "unreachable",
        `ledger API at ${this.#base}: ${requestFailure(e, this.#requestTimeout)}`,
        {
          cause: e,
        },
      )
    }
    if (isRedirect(res))
      throw new LedgerHttpError(
        res.status,
        "invalid_response",
        `ledger API answered a redirect, which is not followed; set url to where the API is`,
      )
    if (bytes === null)
      throw new LedgerHttpError(
        res.status,
        "response_too_large",
        `ledger API answered more than ${this.#maxResponseBytes} bytes (maxResponseBytes)`,
      )
    const text = decoder.decode(bytes)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new LedgerHttpError(
        res.status,
        "invalid_response",
        `ledger API answered ${res.status} with non-JSON; check the API's base URL`,
      )
    }
    const err = (json as { error?: { code?: string; message?: string } } | null)?.error
    // A refusal is the error envelope whatever its status: a 200 `ledger_stale_fence` is no write.
    if (!res.ok || err !== undefined) {
      // Only the row route's own answer means "no such row": a proxy's 404 page, or the app's answer for a route it
      // does not have (a wrong base path, also `not_found`), is an outage, never an empty ledger.
      if (
        allow404 &&
        res.status === 404 &&
        err?.code === "not_found" &&
        // Tested as text only: String() of a message such as {"toString": 0} threw a bare TypeError.
        typeof err.message === "string" &&
        /^no row '/.test(err.message)
      )
        return null
      // Its code and text as the API's (a string code, a bounded message): a 60 MB message, or a code that was an
      // object, went on whole into the ledger's outage error.
      throw new LedgerHttpError(
        res.status,
        serverCode(err?.code),
        typeof err?.message === "string" ? serverText(err.message) : `HTTP ${res.status}`,
      )
    }
    // Anything else (`null`, `{}`, a proxy's JSON) is not the route's answer: never "no row", "written" or "lost".
    if (typeof json !== "object" || (json as Row | null)?.[key] === undefined)
      throw malformed(`JSON without the route's '${key}'`)
    return json as T
  }

  #id(requestId: string): string {
    sendable(requestId, "request")
    // URLs take "." and ".." (even as %2E) as path steps: such a row would be read and written at another route.
    if (requestId === "." || requestId === "..") {
      throw new LedgerConfigError(
        `request id '${requestId}' cannot be sent over HTTP (URLs treat it as a path step); use another id`,
      )
    }
    // encodeURIComponent throws a bare URIError on one: set() and tryTransition() failed untyped.
    if (!requestId.isWellFormed())
      throw new LedgerConfigError(
        `request '${clip(requestId)}' holds an unpaired surrogate, which the API cannot keep; nothing was written`,
      )
    return encodeURIComponent(requestId)
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    // No row holds such an id (the server's stores and routes refuse it), and encodeURIComponent throws on a lone
    // surrogate.
    if (isUnstorableText(requestId) || requestId.length > MAX_ID) return null
    const r = await this.#call<{ row: Row }>("GET", `/v1/rows/${this.#id(requestId)}`, "row", undefined, true)
    if (!r) return null
    const e = rowOf(r.row, requestId)
    // A row this process holds, as the claim handed it: leased by its clock. Read with the server's stamps, a holder
    // on another clock checked its lease (a guard method's boundary write, a renewal) against a time it cannot read:
    // an answer that came back after the server's lease lapsed, and a re-run by then, still started the effect.
    const h = this.#restamps.get(requestId)
    return h?.fence === e.fence && e.leaseUntil === h.lease && e.lastHeartbeatAt === h.beat
      ? { ...e, leaseUntil: h.sentLease, lastHeartbeatAt: h.sentBeat }
      : e
  }

  async set(entry: LedgerEntry): Promise<void> {
    let r: { ok?: unknown } | null
    try {
      r = await this.#call("PUT", `/v1/rows/${this.#id(entry.requestId)}`, "ok", { row: rowFor(entry) })
    } catch (e) {
      // The server's store refused it: the same typed refusal as every other backend's.
      if (e instanceof LedgerHttpError && e.code === "ledger_stale_fence") {
        throw new LedgerStaleFenceError(entry.requestId, null, entry.fence)
      }
      throw e
    }
    if (r?.ok !== true) throw malformed("'ok' other than true to a write")
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    refuseUnkeepableClaim(entry, this.limits)
    if (options?.dispatchId) sendable(options.dispatchId, "tool-call id")
    const r = (await this.#call<{ outcome: ClaimResult["outcome"]; entry: Row; dispatch_siblings?: Row[] }>(
      "POST",
      `/v1/rows/${this.#id(entry.requestId)}/claim`,
      "outcome",
      {
        entry: rowFor(entry),
        lease_ttl: leaseTtl,
        now,
        ...(options && "reclaimFence" in options ? { reclaim_fence: options.reclaimFence } : {}),
        ...(options?.dispatchId ? { dispatch_id: options.dispatchId } : {}),
        ...(options?.silentFor !== undefined ? { silent_for: options.silentFor } : {}),
      },
    )) as { outcome: ClaimResult["outcome"]; entry: Row; dispatch_siblings?: Row[] }
    if (!CLAIM_OUTCOMES.includes(r.outcome)) throw malformed(`a claim outcome ${JSON.stringify(r.outcome)}`)
    const e = rowOf(r.entry, entry.requestId)
    if (r.outcome === "claimed") {
      // Only the row this claim wrote licenses a run: IN_FLIGHT under this entry's owner and start time (every store
      // keeps the claimant's started_at; a call of the same ledger, one owner, starts at another moment), at the fence
      // the claim makes (1 for an insert, the reclaimed fence's next). A server of another version or a proxy
      // answering another holder's row (or a fence past 2^53, read as another number) as "claimed" ran the tool
      // beside that holder. Two calls of one ledger started within the clock's resolution stay indistinguishable.
      const reclaim = options?.reclaimFence
      const fenced =
        e.fence === 1 ||
        (reclaim === undefined
          ? Number.isSafeInteger(e.fence) && e.fence > 1
          : reclaim !== null && e.fence === reclaim + 1)
      if (
        e.owner !== entry.owner ||
        e.startedAt !== entry.startedAt ||
        e.terminalOutcome !== "IN_FLIGHT" ||
        !fenced
      )
        throw malformed("a claimed row this claim did not write (another owner, fence or state)")
      const held = this.#heldAt(e, now)
      return r.dispatch_siblings !== undefined
        ? { outcome: "claimed", entry: held, dispatchSiblings: rowsOf(r.dispatch_siblings).map(decoded) }
        : { outcome: "claimed", entry: held }
    }
    return { outcome: r.outcome, entry: e }
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    const r = (await this.#call<{ ok: boolean }>(
      "POST",
      `/v1/rows/${this.#id(next.requestId)}/transition`,
      "ok",
      {
        next: rowFor(withServerStamps(next, this.#restamps.get(next.requestId))),
        expect: {
          outcomes: expect.outcomes,
          fence: expect.fence,
          ...(expect.owner !== undefined ? { owner: expect.owner } : {}),
          ...(expect.effectPhase !== undefined ? { effect_phase: expect.effectPhase } : {}),
          ...(expect.sideEffectBoundary !== undefined
            ? { side_effect_boundary: expect.sideEffectBoundary }
            : {}),
          ...(expect.leaseHeldAt !== undefined ? { lease_held_at: expect.leaseHeldAt } : {}),
          ...(expect.silentFor !== undefined ? { silent_for: expect.silentFor } : {}),
        },
      },
    ).catch((e: unknown) => {
      // Another holder's lease is live by the server's clock, whatever this one read: the row is still held, so the
      // write lost as a race does (the ledger re-reads it and polls), never an outage.
      if (e instanceof LedgerHttpError && e.code === "lease_held") return { ok: false }
      throw e
    })) as { ok: unknown; lease_until?: unknown; last_heartbeat_at?: unknown }
    // Never "lost the race" for an answer that is not the route's: the ledger would drop the result it was storing.
    if (typeof r?.ok !== "boolean") throw malformed("a transition answer without a boolean 'ok'")
    if (r.ok) this.#restamped(next, r.lease_until, r.last_heartbeat_at)
    return r.ok
  }

  /**
   * The row a claim stored, as its holder keeps it: leased from `now` by the ledger's clock, which its own checks of
   * the lease read (a renewal's, the boundary write's), for as long as the server leased it from its own now.
   */
  #heldAt(e: LedgerEntry, now: number): LedgerEntry {
    const beat = e.lastHeartbeatAt
    if (e.leaseUntil === null || beat === null || beat === now) return e
    const held = { ...e, leaseUntil: now + (e.leaseUntil - beat), lastHeartbeatAt: now }
    this.#remember(held, e.leaseUntil, beat)
    return held
  }

  /** Remembers the server's stamps for the holder of `next`, or forgets the row once it is no longer held. */
  #restamped(next: LedgerEntry, lease: unknown, beat: unknown): void {
    const id = next.requestId
    if (typeof lease === "number" && typeof beat === "number") this.#remember(next, lease, beat)
    else if (next.terminalOutcome !== "IN_FLIGHT" || this.#restamps.get(id)?.fence !== next.fence) {
      this.#restamps.delete(id)
    }
  }

  #remember(held: LedgerEntry, lease: number, beat: number): void {
    const id = held.requestId
    this.#restamps.delete(id)
    this.#restamps.set(id, {
      fence: held.fence,
      sentLease: held.leaseUntil,
      sentBeat: held.lastHeartbeatAt,
      lease,
      beat,
    })
    if (this.#restamps.size > this.#sweepAt) this.#sweep(beat)
  }

  /** Drops the rows the server leased until before `now` (its clock: the latest stamp it answered). */
  #sweep(now: number): void {
    for (const [id, r] of this.#restamps) if (r.lease <= now) this.#restamps.delete(id)
    // As many rows again before the next sweep: a write stays O(1) amortized however many calls are held.
    this.#sweepAt = Math.max(MAX_RESTAMPS, 2 * this.#restamps.size)
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    const head = pairHeadOptions(options)
    if (head) return yield* startingWith(this.list(head), options)
    // A URL sends an unpaired surrogate as U+FFFD (another prefix's rows), and the API refuses U+0000 with a 400.
    if (listsNothing(options)) return
    let remaining = options.limit ?? Number.POSITIVE_INFINITY
    let cursor = options.cursor
    // A whole listing takes the API's own page size: a limit over its maxPageSize (which may be under 500) is a 400.
    // So is a finite one (the operator route scans 20 rows per row shown): refused once, the API's own is taken.
    let sized = remaining !== Number.POSITIVE_INFINITY
    const seen = new Set<string>()
    while (remaining > 0) {
      const q = new URLSearchParams(sized ? { limit: String(Math.min(remaining, 500)) } : {})
      if (options.prefix) q.set("prefix", options.prefix)
      if (cursor) q.set("cursor", cursor)
      let page: { rows: Row[]; cursor: string | null }
      try {
        page = (await this.#call("GET", `/v1/rows?${q}`, "rows")) as typeof page
      } catch (e) {
        if (!sized || (e as LedgerHttpError).code !== "invalid_query") throw e
        sized = false
        continue
      }
      const rows = rowsOf(page.rows)
      for (const row of rows) {
        // A server that answers more than asked (or its own page size) must not list past the limit.
        if (remaining <= 0) return
        yield decoded(row)
        remaining--
      }
      if (!page.cursor) return
      // A page that does not move the cursor forward, or moves it back to one seen (A, B, A), would be asked for
      // again forever.
      if (rows.length === 0 || page.cursor === cursor || seen.has(page.cursor))
        throw malformed(`a cursor that does not advance`)
      seen.add(page.cursor)
      cursor = page.cursor
    }
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    if (isUnstorableText(dispatchId) || dispatchId.length > MAX_ID) return []
    const r = (await this.#call<{ rows: Row[] }>("GET", `/v1/dispatch/${this.#id(dispatchId)}`, "rows")) as {
      rows: Row[]
    }
    return rowsOf(r.rows).map(decoded)
  }
}
