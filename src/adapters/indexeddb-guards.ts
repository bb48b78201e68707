// Task ledger, StateFlush and audit receipt stores in IndexedDB (browsers; Node with fake-indexeddb). One database
// (default `mycelium-guards`) with an object store each. Every compare-and-swap is one readwrite transaction that
// awaits nothing but its own requests, so two tabs racing on one key are serialized by the database.
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import { ReceiptStoreContendedError, ReceiptStoreCorruptError } from "../core/receipts/errors.ts"
import type { AuditReceiptRecord, Receipt } from "../core/receipts/record.ts"
import {
  AsyncQueue,
  cutPage,
  matchesList,
  pageBounds,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { readStoredReceipt } from "../core/receipts/stored.ts"
import { clip } from "../core/repr.ts"
import { StateSnapshotError } from "../core/state/errors.ts"
import { parseSnapshot, type StateFlushStore, type StateSnapshot } from "../core/state/snapshot.ts"
import { TaskRowError } from "../core/tasks/errors.ts"
import { parseTaskLease, parseTaskRow, type StoredTask, type TaskRecord } from "../core/tasks/record.ts"
import { recordVersion, type TaskStore } from "../core/tasks/store.ts"
import { blockedTimeoutOption, openWithStores } from "./indexeddb-open.ts"

export interface IndexedDbGuardStoreOptions {
  /** Database name. Default `mycelium-guards`. */
  readonly dbName?: string
  /** Default `globalThis.indexedDB`. */
  readonly indexedDB?: IDBFactory
  /** Default `"strict"`: on disk before the call proceeds. */
  readonly durability?: IDBTransactionDurability
  /**
   * Seconds the open of the database may take (default 10; `null`: no limit). It waits behind an upgrade or deletion
   * of the database that another connection blocks, forever if that connection never closes; past the limit the
   * call fails with `LedgerStorageUnavailableError`.
   */
  readonly blockedTimeout?: number | null
}

const TASKS = "tasks"
const STATES = "state"
const RECEIPTS = "receipts"
const TAILS = "receipt_tails"
/** Each store and its key path (none: auto-increment keys). */
const ALL_KEYS: [string, string][] = [
  [TASKS, "request_id"],
  [STATES, "run_id"],
  [RECEIPTS, ""],
  [TAILS, "ledger"],
]

const request = <T>(r: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })

const done = (tx: IDBTransaction): Promise<void> =>
  new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"))
  })

/** One connection per database name and factory, opened on first use. */
class GuardDb {
  readonly name: string
  readonly #factory: IDBFactory | undefined
  readonly #wait: number | null
  readonly durability: IDBTransactionDurability
  #db: Promise<IDBDatabase> | null = null

  constructor(options: IndexedDbGuardStoreOptions) {
    this.name = options.dbName ?? "mycelium-guards"
    this.#factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB
    this.durability = options.durability ?? "strict"
    this.#wait = blockedTimeoutOption(options.blockedTimeout)
  }

  open(): Promise<IDBDatabase> {
    if (this.#db) return this.#db
    const db = openWithStores(
      this.#factory,
      this.name,
      this.#wait,
      "the task, state and receipt stores",
      (d) => ALL_KEYS.every(([n]) => d.objectStoreNames.contains(n)),
      (d) => {
        for (const [n, keyPath] of ALL_KEYS)
          if (!d.objectStoreNames.contains(n))
            d.createObjectStore(n, keyPath ? { keyPath } : { autoIncrement: true })
      },
      () => {
        this.#db = null
      },
    )
    db.catch(() => {
      this.#db = null
    })
    this.#db = db
    return db
  }

  async tx(stores: string[], mode: IDBTransactionMode): Promise<IDBTransaction> {
    return (await this.open()).transaction(stores, mode, { durability: this.durability })
  }

  async close(): Promise<void> {
    const db = this.#db
    this.#db = null
    if (db) (await db.catch(() => null))?.close()
  }
}

interface TaskValue {
  readonly request_id: string
  readonly row: unknown
  readonly lease: unknown
}

function toStored(v: TaskValue): StoredTask {
  const row = parseTaskRow(v.row)
  if (!row) throw new TaskRowError(`task '${clip(v.request_id)}' in IndexedDB is not a task ledger entry`)
  const lease = v.lease == null ? null : parseTaskLease(v.lease)
  return { row, lease, version: recordVersion({ row, lease }) }
}

export class IndexedDbTaskStore implements TaskStore {
  readonly kind = "indexeddb"
  readonly #db: GuardDb
  constructor(options: IndexedDbGuardStoreOptions = {}) {
    this.#db = new GuardDb(options)
  }

  async get(requestId: string): Promise<StoredTask | null> {
    const tx = await this.#db.tx([TASKS], "readonly")
    const v = (await request(tx.objectStore(TASKS).get(requestId))) as TaskValue | undefined
    return v ? toStored(v) : null
  }

  async swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    const tx = await this.#db.tx([TASKS], "readwrite")
    const finished = done(tx)
    finished.catch(() => {})
    const store = tx.objectStore(TASKS)
    const v = (await request(store.get(requestId))) as TaskValue | undefined
    if ((v ? toStored(v).version : null) !== expected) {
      tx.abort()
      return null
    }
    store.put({ request_id: requestId, row: next.row, lease: next.lease })
    await finished
    return recordVersion(next)
  }

  async *list(): AsyncIterable<StoredTask> {
    const tx = await this.#db.tx([TASKS], "readonly")
    const all = (await request(tx.objectStore(TASKS).getAll())) as TaskValue[]
    for (const v of all) yield toStored(v)
  }

  close(): Promise<void> {
    return this.#db.close()
  }
}

export class IndexedDbStateFlushStore implements StateFlushStore {
  readonly kind = "indexeddb"
  readonly #db: GuardDb
  constructor(options: IndexedDbGuardStoreOptions = {}) {
    this.#db = new GuardDb(options)
  }

  async load(runId: string): Promise<StateSnapshot | null> {
    const tx = await this.#db.tx([STATES], "readonly")
    const v = await request(tx.objectStore(STATES).get(runId))
    if (v === undefined) return null
    const s = parseSnapshot(v)
    if (!s) throw new StateSnapshotError(`snapshot '${runId}' in IndexedDB is not a state snapshot`)
    return s
  }

  async save(snapshot: StateSnapshot): Promise<void> {
    const tx = await this.#db.tx([STATES], "readwrite")
    const finished = done(tx)
    tx.objectStore(STATES).put(snapshot)
    await finished
  }

  close(): Promise<void> {
    return this.#db.close()
  }
}

/**
 * Receipts in append order. Sealing a link signs asynchronously, which an IndexedDB transaction cannot wait for,
 * so an append reads the chain's tail, seals, and commits only if the tail is still the one it sealed against
 * (another tab appending meanwhile makes it seal again): no forks, no lost receipts.
 */
export class IndexedDbReceiptStore implements ReceiptStore {
  readonly kind = "indexeddb"
  readonly #db: GuardDb
  readonly #queue = new AsyncQueue()
  constructor(options: IndexedDbGuardStoreOptions = {}) {
    this.#db = new GuardDb(options)
  }

  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    return this.#queue.run(async () => {
      for (let attempt = 0; attempt < 50; attempt++) {
        let tail: ChainTail | null = null
        if (chain) {
          const rtx = await this.#db.tx([TAILS], "readonly")
          const t = (await request(rtx.objectStore(TAILS).get(chain.ledger))) as
            | Partial<ChainTail>
            | undefined
          // Another writer's tail without its digest was continued: the next receipt's link pointed at nothing.
          if (t !== undefined && (typeof t?.digest !== "string" || typeof t.seq !== "number"))
            throw new ReceiptStoreCorruptError(
              `IndexedDB ${this.#db.name} ${TAILS} key ${chain.ledger} is not a chain tail: set it to the chain's last link's {ledger, seq, digest}, then retry`,
            )
          tail = (t as ChainTail | undefined) ?? null
        }
        const link = chain ? await chain.seal(tail) : null
        const receipt: Receipt = link ? { ...record, chain: link } : { ...record }
        const tx = await this.#db.tx([RECEIPTS, TAILS], "readwrite")
        const finished = done(tx)
        finished.catch(() => {})
        if (chain && link) {
          const now = (await request(tx.objectStore(TAILS).get(chain.ledger))) as ChainTail | undefined
          if ((now?.digest ?? null) !== (tail?.digest ?? null)) {
            tx.abort()
            continue
          }
        }
        // The receipt first: a record IndexedDB cannot clone throws here, and the transaction (not aborted by a
        // throw) would otherwise commit the moved tail alone, a link missing from the chain for ever after.
        tx.objectStore(RECEIPTS).add(receipt)
        if (chain && link)
          tx.objectStore(TAILS).put({ ledger: chain.ledger, seq: link.seq, digest: link.digest })
        await finished
        return receipt
      }
      // As every store's: the typed contention the docs name, not an outage.
      throw new ReceiptStoreContendedError(record.receipt_id, chain?.ledger ?? "", 50)
    })
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    const tx = await this.#db.tx([RECEIPTS], "readonly")
    const [keys, all] = await Promise.all([
      request(tx.objectStore(RECEIPTS).getAllKeys()),
      request(tx.objectStore(RECEIPTS).getAll()),
    ])
    return all.map((v, i) => this.#receipt(v, keys[i])).filter((r) => matchesList(r, options))
  }

  // Checked as every store's: what another writer (a tab of other code, an extension) put here was handed out as a
  // receipt, and a null one failed a filtered list with a bare TypeError.
  #receipt(v: unknown, key: IDBValidKey | undefined): Receipt {
    return readStoredReceipt(v, `IndexedDB ${this.#db.name} ${RECEIPTS} key ${String(key)}`) as Receipt
  }

  /** Cursors are the store's auto-increment keys: one key range read per page. */
  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const tx = await this.#db.tx([RECEIPTS], "readonly")
    const kr = (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange
    if (!kr) throw new LedgerStorageUnavailableError("IDBKeyRange is not available in this runtime")
    const range = kr.lowerBound(b.start, true)
    const [keys, all] = await Promise.all([
      request(tx.objectStore(RECEIPTS).getAllKeys(range, b.window)),
      request(tx.objectStore(RECEIPTS).getAll(range, b.window)),
    ])
    const page = cutPage(
      all.map((v, i) => this.#receipt(v, keys[i])),
      b,
      (r) => matchesList(r, options),
      (i) => String(keys[i]),
    )
    return { receipts: page.items, cursor: page.cursor }
  }

  close(): Promise<void> {
    return this.#db.close()
  }
}
