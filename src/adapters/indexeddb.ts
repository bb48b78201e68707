// IndexedDB ledger store for browsers (and Node with fake-indexeddb). Rows are the Python original's payload,
// keyed by request_id, so an export of the store reads like the file backend's JSON.

import { type IDBPDatabase, wrap } from "idb"
import {
  type ClaimOptions,
  type ClaimResult,
  decideClaim,
  entryFromRow,
  entryToRow,
  type LedgerEntry,
  type LedgerRow,
  LedgerStaleFenceError,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  type ListOptions,
  matchesExpectation,
  staleSetFence,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { blockedTimeoutOption, openWithStores } from "./indexeddb-open.ts"

export interface IndexedDbLedgerStorageOptions {
  /** Database name. Default `mycelium-ledger`. */
  readonly dbName?: string
  /** Object store inside the database. Default `ledger`. Several stores may share one database. */
  readonly storeName?: string
  /** The IDBFactory to open the database with. Default `globalThis.indexedDB`. */
  readonly indexedDB?: IDBFactory
  /**
   * Durability of claim and compare-and-set transactions. Default `"strict"`: the row is on disk before the
   * call proceeds, so an OS crash cannot forget a claim whose effect already ran. `"relaxed"` is faster and
   * survives tab and browser crashes, not power loss.
   */
  readonly durability?: IDBTransactionDurability
  /**
   * Seconds an open of the database may wait for another connection that holds it against a version change (the
   * upgrade that adds this store, or one queued before this open), before the call fails with
   * `LedgerStorageUnavailableError`. Default 10: time for a connection that closes on `versionchange` to finish
   * its transaction, and for a first open on a slow device (the limit covers every open). `null` waits as long as
   * the other connection stays open.
   */
  readonly blockedTimeout?: number | null
}

/** Index on the dispatch id (`kwargs.tool_call_id`): the ledger's cross-row drift gate looks rows up by it. */
const DISPATCH_INDEX = "by_tool_call_id"
const LIST_PAGE = 200

/** Swallows the rejection of a request promise nobody awaits; the transaction's own outcome reports it. */
const quiet = (p: Promise<unknown>): void => {
  p.catch(() => {})
}

/**
 * Each claim and compare-and-set runs inside one `readwrite` transaction that awaits nothing but its own
 * IDB requests, so two tabs or two connections racing on one key are serialized by the database: one winner.
 */
export class IndexedDbLedgerStorage implements LedgerStorage {
  readonly kind = "indexeddb"
  readonly dbName: string
  readonly storeName: string
  readonly #factory: IDBFactory | undefined
  readonly #txOptions: IDBTransactionOptions
  readonly #blockedTimeout: number | null
  #db: Promise<IDBPDatabase> | null = null

  constructor(options: IndexedDbLedgerStorageOptions = {}) {
    this.dbName = options.dbName ?? "mycelium-ledger"
    this.storeName = options.storeName ?? "ledger"
    this.#factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB
    this.#txOptions = { durability: options.durability ?? "strict" }
    this.#blockedTimeout = blockedTimeoutOption(options.blockedTimeout)
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    const db = await this.#open()
    const row = (await db.get(this.storeName, requestId)) as LedgerRow | undefined
    return row ? entryFromRow(row) : null
  }

  async set(entry: LedgerEntry): Promise<void> {
    const db = await this.#open()
    const tx = db.transaction(this.storeName, "readwrite", this.#txOptions)
    let refused: number | null
    try {
      const row = (await tx.store.get(entry.requestId)) as LedgerRow | undefined
      refused = staleSetFence(row ? entryFromRow(row) : null, entry)
      if (refused === null) quiet(tx.store.put(entryToRow(entry)))
      await tx.done
    } catch (err) {
      abortQuietly(tx)
      throw err
    }
    if (refused !== null) throw new LedgerStaleFenceError(entry.requestId, refused, entry.fence)
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    const db = await this.#open()
    const tx = db.transaction(this.storeName, "readwrite", this.#txOptions)
    try {
      const row = (await tx.store.get(entry.requestId)) as LedgerRow | undefined
      const { result, write } = decideClaim(row ? entryFromRow(row) : null, entry, leaseTtl, now, options)
      if (write) quiet(tx.store.put(entryToRow(write)))
      await tx.done
      return result
    } catch (err) {
      abortQuietly(tx)
      throw err
    }
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    const db = await this.#open()
    const tx = db.transaction(this.storeName, "readwrite", this.#txOptions)
    try {
      const row = (await tx.store.get(next.requestId)) as LedgerRow | undefined
      const ok = matchesExpectation(row ? entryFromRow(row) : null, expect)
      if (ok) quiet(tx.store.put(entryToRow(next)))
      await tx.done
      return ok
    } catch (err) {
      abortQuietly(tx)
      throw err
    }
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    const db = await this.#open()
    const prefix = options.prefix ?? ""
    const limit = options.limit ?? Number.POSITIVE_INFINITY
    let after = options.cursor
    let n = 0
    // Paged reads: a transaction cannot stay open across the consumer's awaits, so each page is its own read.
    while (n < limit) {
      const range = lowerRange(this.#keyRange(), prefix, after)
      // Whole: getAll() truncates a fractional count, and a count of 0 means every row.
      const count = Math.min(LIST_PAGE, Math.ceil(limit - n))
      const rows = (await db.getAll(this.storeName, range, count)) as LedgerRow[]
      for (const row of rows) {
        const id = row.request_id as string
        if (!id.startsWith(prefix)) return
        n++
        yield entryFromRow(row)
        after = id
      }
      if (rows.length < count) return
    }
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    const db = await this.#open()
    const rows = (await db.getAllFromIndex(this.storeName, DISPATCH_INDEX, dispatchId)) as LedgerRow[]
    // The index gives them in key order; the drift gate acts on the first, which names the prior request in its
    // refusal and, under onArgsDrift "hard", picks the error. First-claimed first, as the memory and Durable Object
    // stores give them: by start time (a claim's), then fence (a reclaim's).
    return rows.map((r) => entryFromRow(r)).sort((a, b) => a.startedAt - b.startedAt || a.fence - b.fence)
  }

  async close(): Promise<void> {
    const db = this.#db
    this.#db = null
    if (db) (await db.catch(() => null))?.close()
  }

  #keyRange(): typeof IDBKeyRange {
    const kr = (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange
    if (!kr) throw new LedgerStorageUnavailableError("IDBKeyRange is not available in this runtime")
    return kr
  }

  #open(): Promise<IDBPDatabase> {
    if (!this.#db) {
      const store = this.storeName
      this.#db = openWithStores(
        this.#factory,
        this.dbName,
        this.#blockedTimeout,
        `store '${store}'`,
        (db) => hasSchema(db, store),
        (db, tx) => {
          const s = db.objectStoreNames.contains(store)
            ? tx?.objectStore(store)
            : db.createObjectStore(store, { keyPath: "request_id" })
          if (s && !s.indexNames.contains(DISPATCH_INDEX))
            s.createIndex(DISPATCH_INDEX, "kwargs.tool_call_id", { unique: false })
        },
        () => {
          this.#db = null
        },
      ).then((db) => wrap(db))
      // A failed open is retried on the next call rather than cached forever.
      this.#db.catch(() => {
        this.#db = null
      })
    }
    return this.#db
  }
}

function lowerRange(kr: typeof IDBKeyRange, prefix: string, cursor: string | undefined): IDBKeyRange | null {
  if (cursor !== undefined && cursor >= prefix) return kr.lowerBound(cursor, true)
  return prefix ? kr.lowerBound(prefix) : null
}

function abortQuietly(tx: { abort(): void }): void {
  try {
    tx.abort()
  } catch {
    // already finished or aborted
  }
}

function hasSchema(db: IDBDatabase, storeName: string): boolean {
  if (!db.objectStoreNames.contains(storeName)) return false
  const tx = db.transaction(storeName, "readonly")
  // No requests are issued, so the transaction simply commits empty.
  return tx.objectStore(storeName).indexNames.contains(DISPATCH_INDEX)
}
