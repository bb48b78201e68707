// Cloudflare Durable Object ledger store: the object (SQLite-backed) serves the storage contract over RPC, and
// DurableObjectLedgerStorage is the client any Worker uses. Import this module only inside workerd.

import { DurableObject } from "cloudflare:workers"
import {
  type ClaimOptions,
  type ClaimResult,
  decideClaim,
  dispatchIdOf,
  entryFromRow,
  entryToRow,
  LedgerDispatchOverflowError,
  type LedgerEntry,
  LedgerError,
  LedgerStaleFenceError,
  type LedgerStorage,
  type ListOptions,
  matchesExpectation,
  refuseUnkeepableClaim,
  type StorageLimits,
  staleSetFence,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { InvalidOptionError } from "../core/errors.ts"
import { LedgerConfigError } from "../core/ledger/errors.ts"
import { compareCodePoints } from "../core/ledger/model/canonical.ts"
import type { ChainTail } from "../core/receipts/chain.ts"
import type { ReceiptLink } from "../core/receipts/record.ts"
import { clip } from "../core/repr.ts"
import type { StateSnapshot } from "../core/state/snapshot.ts"
import { pairHeadOptions, startingWith } from "../core/storage/text.ts"
import type { StoredTask, TaskRecord } from "../core/tasks/record.ts"
import {
  GuardTables,
  type ReceiptPageRows,
  type SqlStorageLike,
  type TaskPageRows,
} from "./durable-object-guards.ts"

// ---- minimal structural types of the workerd APIs used (no @cloudflare/workers-types dependency) ----------

/** The part of `DurableObjectState` the ledger object needs. */
export { LedgerDispatchOverflowError }

export interface LedgerObjectState {
  readonly storage: { readonly sql: SqlStorageLike }
}

/** A Durable Object namespace binding (`env.LEDGER`); only `idFromName` and `get` are used. */
export interface LedgerObjectNamespace {
  idFromName(name: string): unknown
  get(id: unknown): unknown
}

/** One page of a shard's rows in key order. */
export interface LedgerListPage {
  readonly entries: LedgerEntry[]
  /** True when the shard has no further rows for this prefix. */
  readonly done: boolean
}

/**
 * SQLite refused to write the row (over its value size or JSON depth). Returned, not thrown: an exception out of an
 * RPC method reaches the caller, but workerd also logs it as uncaught, which an expected refusal is not.
 */
export interface SqliteRefusal {
  readonly sqliteRefused: string
}

/** The RPC surface of MyceliumLedgerObject, as seen through a stub. */
export interface LedgerObjectRpc {
  ledgerGet(requestId: string): Promise<LedgerEntry | null>
  /** Null when written; the stored fence when refused as stale (an error class would not survive RPC). */
  ledgerSet(entry: LedgerEntry): Promise<number | null | SqliteRefusal>
  ledgerClaim(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult | SqliteRefusal>
  ledgerTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean | SqliteRefusal>
  ledgerList(options: ListOptions): Promise<LedgerListPage>
  ledgerFindByDispatchId(dispatchId: string): Promise<LedgerEntry[] | null>
  ledgerShards(shards: number): Promise<number>
}

/**
 * The ledger was created with another shard count: a request id's row is in the shard that count chose, so under
 * this one a completed call would be found nowhere and run again. Nothing was read or written.
 */
export class LedgerShardCountError extends LedgerError {
  override readonly name = "LedgerShardCountError"
  override readonly code = "misconfigured"
  constructor(ledger: string, recorded: number, shards: number) {
    super(
      `ledger '${ledger}' was created with ${recorded} shard(s), not ${shards}: set shards (LEDGER_SHARDS) back to ${recorded}`,
    )
  }
}

// Same table layout as the Python original's SQLite backend, so a dump reads the same.
const TABLE = "mycelium_action_ledger"
// One exec() runs them all (workerd runs every statement of a query).
const SCHEMA =
  `CREATE TABLE IF NOT EXISTS ${TABLE} (request_id TEXT PRIMARY KEY, payload TEXT NOT NULL);` +
  `CREATE INDEX IF NOT EXISTS ${TABLE}_tool_call_id ON ${TABLE} (json_extract(payload, '$.kwargs.tool_call_id'))`
const META = "mycelium_ledger_meta"
const MAX_PAGE = 500
// workerd refuses an RPC answer over 32 MiB; a page stops at this much row text (a string may take 2 bytes a char).
const PAGE_TEXT = 8 * 2 ** 20
// SQLite's 2 MB is a whole row's: the key column beside the payload, whose JSON (holding the id four times) is what the
// ledger measures against maxRowBytes. An id is held to MAX_ID UTF-16 units, 48 KiB of UTF-8 at most in the key, inside
// the 100 KB maxRowBytes leaves: a 400 K id passed the ledger's check and SQLite refused the completion after the
// effect ran (the row stayed IN_FLIGHT, to run again once its lease lapsed).
const MAX_ID = 16_384
const DURABLE_OBJECT_LIMITS: StorageLimits = Object.freeze({ maxRowBytes: 1_900_000, maxDepth: 900 })

// Typed here instead of through the `cloudflare:workers` declaration, so the emitted .d.ts names no module a
// consumer without workers types cannot resolve (it would make the class extend `any`). At run time the base is
// workerd's real DurableObject, which RPC needs.
const LedgerObjectBase: abstract new (ctx: LedgerObjectState, env: unknown) => object = DurableObject

/**
 * The ledger's Durable Object. Every method is synchronous: workerd runs one event at a time per object, so
 * a read, decision and write with no await in between is one atomic step; the SQL API commits it durably
 * before the RPC reply leaves the object (output gate).
 */
export class MyceliumLedgerObject extends LedgerObjectBase {
  readonly #sql: SqlStorageLike
  readonly #guards: GuardTables

  constructor(ctx: LedgerObjectState, env: unknown) {
    super(ctx, env)
    this.#sql = ctx.storage.sql
    this.#sql.exec(SCHEMA)
    this.#guards = new GuardTables(this.#sql)
  }

  // ---- task ledger and state flush stores (durable-object-guards.ts) -----------------------------------------

  taskGet(requestId: string): StoredTask | null {
    return this.#guards.taskGet(requestId)
  }

  taskSwap(requestId: string, expected: string | null, next: TaskRecord): string | null {
    return this.#guards.taskSwap(requestId, expected, next)
  }

  taskPage(after: string | null): TaskPageRows {
    return this.#guards.taskPage(after)
  }

  stateLoad(runId: string): StateSnapshot | null {
    return this.#guards.stateLoad(runId)
  }

  stateSave(snapshot: StateSnapshot): void {
    this.#guards.stateSave(snapshot)
  }

  receiptTail(ledger: string): ChainTail | null {
    return this.#guards.receiptTail(ledger)
  }

  receiptAppend(
    receiptText: string,
    agentId: string,
    link: ReceiptLink | null,
    expectedDigest: string | null,
  ): boolean {
    return this.#guards.receiptAppend(receiptText, agentId, link, expectedDigest)
  }

  receiptPage(after: number, window: number, agentId: string | null, ledger: string | null): ReceiptPageRows {
    return this.#guards.receiptPage(after, window, agentId, ledger)
  }

  // ---- action ledger -------------------------------------------------------------------------------------------

  ledgerGet(requestId: string): LedgerEntry | null {
    const r = this.#sql.exec(`SELECT payload FROM ${TABLE} WHERE request_id = ?`, requestId).toArray()[0]
    return r ? entryFromRow(JSON.parse(String(r.payload))) : null
  }

  ledgerSet(entry: LedgerEntry): number | null | SqliteRefusal {
    return staleSetFence(this.ledgerGet(entry.requestId), entry) ?? this.#write(entry)
  }

  ledgerClaim(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): ClaimResult | SqliteRefusal {
    const { result, write } = decideClaim(this.ledgerGet(entry.requestId), entry, leaseTtl, now, options)
    if (write) {
      const refusal = this.#write(write)
      if (refusal) return refusal
    }
    // The drift gate's siblings, read in the same atomic step: saves the ledger a findByDispatchId round trip. Left
    // out when they are over the budget, and the ledger's own findByDispatchId is refused then.
    const siblings =
      result.outcome === "claimed" && options?.dispatchId && this.ledgerFindByDispatchId(options.dispatchId)
    return siblings ? { ...result, dispatchSiblings: siblings } : result
  }

  ledgerTransition(next: LedgerEntry, expect: TransitionExpectation): boolean | SqliteRefusal {
    if (!matchesExpectation(this.ledgerGet(next.requestId), expect)) return false
    return this.#write(next) ?? true
  }

  ledgerList(options: ListOptions): LedgerListPage {
    const prefix = options.prefix ?? ""
    const limit = Math.max(0, Math.min(options.limit ?? MAX_PAGE, MAX_PAGE))
    const rows =
      options.cursor !== undefined
        ? this.#sql.exec(
            `SELECT payload FROM ${TABLE} WHERE request_id >= ? AND request_id > ? ORDER BY request_id LIMIT ?`,
            prefix,
            options.cursor,
            limit + 1,
          )
        : this.#sql.exec(
            `SELECT payload FROM ${TABLE} WHERE request_id >= ? ORDER BY request_id LIMIT ?`,
            prefix,
            limit + 1,
          )
    const entries: LedgerEntry[] = []
    let text = 0
    // Row by row: toArray() would hold the whole window of rows (up to 1.9 MB each) at once.
    for (const r of rows) {
      const payload = String(r.payload)
      const e = entryFromRow(JSON.parse(payload))
      // Keys with the prefix are contiguous in key order: the first miss ends the range.
      if (!e.requestId.startsWith(prefix)) return { entries, done: true }
      text += payload.length
      if (entries.length === limit || (entries.length > 0 && text > PAGE_TEXT))
        return { entries, done: false }
      entries.push(e)
    }
    return { entries, done: true }
  }

  /**
   * The shard count this ledger was created with; the first call records `shards`. Asked of the object named after
   * the ledger (shard 0 when there is one). Rows already here were written by one shard, before counts were recorded.
   */
  ledgerShards(shards: number): number {
    this.#sql.exec(`CREATE TABLE IF NOT EXISTS ${META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)`)
    const r = this.#sql.exec(`SELECT value FROM ${META} WHERE key = 'shards'`).toArray()[0]
    if (r) return Number(r.value)
    const n = this.#sql.exec(`SELECT 1 FROM ${TABLE} LIMIT 1`).toArray().length ? 1 : shards
    this.#sql.exec(`INSERT INTO ${META} (key, value) VALUES ('shards', ?)`, String(n))
    return n
  }

  /**
   * Every row under the id, or null past PAGE_TEXT of them: rows under one call id may each be 1.9 MB and pile up
   * (drifted re-sends), and an answer over workerd's 32 MiB failed after the claim was written. All or none: the
   * drift gate refuses on any one sibling, so a cut list could drop the one that refuses (another thread's rows under
   * a reused call id, or drifted ones under policy "off", pass it).
   */
  ledgerFindByDispatchId(dispatchId: string): LedgerEntry[] | null {
    const entries: LedgerEntry[] = []
    let text = 0
    for (const r of this.#sql.exec(
      `SELECT payload FROM ${TABLE} WHERE json_extract(payload, '$.kwargs.tool_call_id') = ?`,
      dispatchId,
    )) {
      const payload = String(r.payload)
      text += payload.length
      if (text > PAGE_TEXT) return null
      const e = entryFromRow(JSON.parse(payload))
      if (dispatchIdOf(e) === dispatchId) entries.push(e)
    }
    return entries
  }

  /** Null when written. A refused row is a value (see SqliteRefusal); any other failure throws. */
  #write(entry: LedgerEntry): SqliteRefusal | null {
    try {
      // An upsert, not REPLACE: a row keeps its rowid, so dispatch siblings (read through the index, in rowid order)
      // stay in first-claimed order, the one the drift gate reads on every store.
      this.#sql.exec(
        `INSERT INTO ${TABLE} (request_id, payload) VALUES (?, ?) ON CONFLICT(request_id) DO UPDATE SET payload = excluded.payload`,
        entry.requestId,
        JSON.stringify(entryToRow(entry)),
      )
      return null
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e)
      // SQLITE_TOOBIG (a value over 2 MB) and "malformed JSON" (nesting past the JSON index's depth limit).
      if (/SQLITE_TOOBIG|malformed JSON/.test(message)) return { sqliteRefused: message }
      throw e
    }
  }
}

// ---- client -------------------------------------------------------------------------------------------------

export interface DurableObjectLedgerStorageOptions {
  /**
   * Number of objects the ledger is spread over (default 1). A request id always maps to the same shard, so it is
   * fixed for the life of a ledger: the first access records it, and another count is refused (LedgerShardCountError).
   */
  readonly shards?: number
  /** Object name (the tenant's ledger). Default `mycelium-ledger`. */
  readonly name?: string
  /** Rows fetched per shard per round trip while listing. Default 128. */
  readonly listPageSize?: number
}

/** The object's answer, or the error its SQLite refusal stands for (as the thrown one read before: a plain Error). */
function written<T>(r: T | SqliteRefusal): T {
  if (r !== null && typeof r === "object" && "sqliteRefused" in r) throw new Error(r.sqliteRefused)
  return r
}

/**
 * A LedgerStorage client for MyceliumLedgerObject. Stubs are created per call: workerd forbids sharing I/O
 * objects across requests, and `idFromName` + `get` are local and cheap. Every method awaits the RPC and
 * returns a native Promise: workerd's RPC promise rejects `.catch()`/`.then(undefined, f)` from callers.
 */
export class DurableObjectLedgerStorage implements LedgerStorage {
  readonly kind = "durable-object"
  /**
   * SQLite's limits in a Durable Object: 2 MB a row (its payload and its id, held to 16 Ki characters), JSON nested
   * at most 1000 deep (both with a margin).
   */
  readonly limits: StorageLimits = DURABLE_OBJECT_LIMITS
  readonly shards: number
  readonly name: string
  readonly #ns: LedgerObjectNamespace
  readonly #pageSize: number
  readonly #ids: unknown[]
  #recorded: number | undefined

  constructor(namespace: LedgerObjectNamespace, options: DurableObjectLedgerStorageOptions = {}) {
    const shards = options.shards ?? 1
    if (!Number.isInteger(shards) || shards < 1)
      throw new InvalidOptionError(`shards must be a positive integer, got ${String(shards)}`)
    this.#ns = namespace
    this.shards = shards
    this.name = options.name ?? "mycelium-ledger"
    this.#pageSize = Math.max(1, Math.min(options.listPageSize ?? 128, MAX_PAGE))
    this.#ids = Array.from({ length: shards }, (_, i) =>
      namespace.idFromName(shards === 1 ? this.name : `${this.name}#${i}/${shards}`),
    )
  }

  /** The shard a request id lives in: its UTF-8 SHA-256 digest's first 32 bits, big-endian, modulo `shards`. */
  async shardOf(requestId: string): Promise<number> {
    if (this.shards === 1) return 0
    // Web Crypto's digest, a round trip's fraction: the bundle carries no SHA-256 of its own (0.6 KB gzipped).
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(requestId))
    return new DataView(digest).getUint32(0) % this.shards
  }

  /** Refuses a count other than the one the ledger was created with; asked once per instance. */
  async #checkShards(): Promise<void> {
    this.#recorded ??= await (this.#ns.get(this.#ns.idFromName(this.name)) as LedgerObjectRpc).ledgerShards(
      this.shards,
    )
    if (this.#recorded !== this.shards)
      throw new LedgerShardCountError(this.name, this.#recorded, this.shards)
  }

  /** The object holding the id's row; an id no row can hold is refused first, before any RPC. */
  async #objectOf(requestId: string): Promise<LedgerObjectRpc> {
    if (requestId.length > MAX_ID)
      throw new LedgerConfigError(
        `request '${clip(requestId)}': an id over ${MAX_ID} characters cannot be kept in a Durable Object (SQLite's 2 MB row holds it beside its payload); shorten it, nothing was written`,
      )
    await this.#checkShards()
    return this.#stub(await this.shardOf(requestId))
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    // No row holds such an id: writes refuse it.
    return requestId.length > MAX_ID ? null : await (await this.#objectOf(requestId)).ledgerGet(requestId)
  }

  async set(entry: LedgerEntry): Promise<void> {
    const refused = written(await (await this.#objectOf(entry.requestId)).ledgerSet(entry))
    if (refused !== null) throw new LedgerStaleFenceError(entry.requestId, refused, entry.fence)
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    refuseUnkeepableClaim(entry, this.limits)
    // One shard sees every sibling; with several, the ledger asks all of them (findByDispatchId) instead.
    const opts = this.shards > 1 && options?.dispatchId ? { ...options, dispatchId: undefined } : options
    return written(await (await this.#objectOf(entry.requestId)).ledgerClaim(entry, leaseTtl, now, opts))
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    return written(await (await this.#objectOf(next.requestId)).ledgerTransition(next, expect))
  }

  /** Every row under the id (the contract's promise, which the drift gate relies on), or a typed refusal. */
  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    await this.#checkShards()
    const parts = await Promise.all(this.#ids.map((_, i) => this.#stub(i).ledgerFindByDispatchId(dispatchId)))
    if (parts.includes(null)) throw new LedgerDispatchOverflowError(dispatchId)
    return (parts as LedgerEntry[][]).flat()
  }

  /** Merges the shards' key-ordered pages (k-way), fetching each shard's next page only when it runs dry. */
  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    // SQLite orders the keys as UTF-8: the ids a pair's first half starts (as startsWith reads it) are not one range.
    const head = pairHeadOptions(options)
    if (head) return yield* startingWith(this.list(head), options)
    const limit = options.limit ?? Number.POSITIVE_INFINITY
    if (limit <= 0) return
    await this.#checkShards()
    const prefix = options.prefix
    // Each shard's unread rows; `after` is the last id it gave, where its next page starts.
    const heads = this.#ids.map((_, i) => ({
      shard: i,
      buf: [] as LedgerEntry[],
      done: false,
      after: options.cursor,
    }))
    const fill = async (h: (typeof heads)[number]): Promise<void> => {
      const page = await this.#stub(h.shard).ledgerList({
        prefix,
        cursor: h.after,
        limit: Math.min(this.#pageSize, limit),
      })
      h.buf = page.entries
      h.done = page.done
    }
    await Promise.all(heads.map(fill))
    for (let n = 0; n < limit; n++) {
      let best: (typeof heads)[number] | null = null
      for (const h of heads) {
        const e = h.buf[0]
        // SQLite orders TEXT by UTF-8 bytes, i.e. by code point: the merge must use the shards' order.
        if (e && (!best || compareCodePoints(e.requestId, (best.buf[0] as LedgerEntry).requestId) < 0))
          best = h
      }
      if (!best) return
      const e = best.buf.shift() as LedgerEntry
      best.after = e.requestId
      yield e
      if (!best.buf.length && !best.done) await fill(best)
    }
  }

  #stub(shard: number): LedgerObjectRpc {
    return this.#ns.get(this.#ids[shard]) as LedgerObjectRpc
  }
}
