// Task ledger, StateFlush and audit receipt stores in the ledger's Durable Object (MyceliumLedgerObject): the tables
// and the synchronous operations the object runs (one event at a time, so each is atomic), and the clients Workers use.
// Import only inside workerd (through durable-object.ts or directly for the clients).
import { pythonDumps } from "../core/python-json.ts"
import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import { chainQueue, ReceiptStoreContendedError, ReceiptStoreCorruptError } from "../core/receipts/errors.ts"
import type { AuditReceiptRecord, Receipt, ReceiptLink } from "../core/receipts/record.ts"
import {
  cutPage,
  pageBounds,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { readStoredReceipt } from "../core/receipts/stored.ts"
import { clip } from "../core/repr.ts"
import { StateSnapshotError, StateSnapshotTooLargeError } from "../core/state/errors.ts"
import { parseSnapshot, type StateFlushStore, type StateSnapshot } from "../core/state/snapshot.ts"
import { TaskRowError } from "../core/tasks/errors.ts"
import { parseTaskLease, parseTaskRow, type StoredTask, type TaskRecord } from "../core/tasks/record.ts"
import type { TaskStore } from "../core/tasks/store.ts"

// Structural types of the workerd SQL API (no @cloudflare/workers-types dependency); the ledger's object uses them too.
type SqlValue = string | number | null | ArrayBuffer
/** What `sql.exec()` returns, as far as the stores read it; iterating reads rows one at a time. */
export interface SqlCursorLike extends Iterable<Record<string, SqlValue>> {
  toArray(): Array<Record<string, SqlValue>>
}
/** The part of a Durable Object's `ctx.storage.sql` the stores use. */
export interface SqlStorageLike {
  exec(query: string, ...bindings: Array<string | number | null>): SqlCursorLike
}

// The original's task table plus a lease column; snapshots keyed by run id, as its StateFlush file is.
const TASKS = "mycelium_task_ledger"
const STATES = "mycelium_state_flush"
const RECEIPTS = "mycelium_audit_receipts"
// SQLite holds at most 2 MB a value, and a receipt carries its result twice (outputs, and inside the JWS): one the
// row limit allows can need 5 MB. Its text is kept in parts of PART chars (at most 3 bytes each), the first in its row.
const PARTS = "mycelium_audit_receipt_parts"
const PART = 500_000
// workerd refuses an RPC answer over 32 MiB; a page stops at this much text (a string may take 2 bytes a char).
const PAGE_TEXT = 8 * 2 ** 20

const utf8 = /* @__PURE__ */ new TextEncoder()

// A task's version is its stored text: only the object writes it, so the same text is the same record (the Neon and
// Upstash stores compare a digest of theirs). A version given before this form (canonical JSON) matches nothing: the
// task ledger reads the row again, as after a lost answer, and goes on if its claim still holds it.
const versionOf = (payload: string, lease: string | null): string => `${payload}\n${lease ?? ""}`

/** A task as its row's and lease's stored text read back: the id (as SQLite reads it) names it in a refusal. */
function storedTask(requestId: string, payload: string, lease: string | null): StoredTask {
  const row = parseTaskRow(JSON.parse(payload))
  if (!row) throw new TaskRowError(`task row '${clip(requestId)}' is not a task ledger entry`)
  return {
    row,
    lease: lease === null ? null : parseTaskLease(JSON.parse(lease)),
    version: versionOf(payload, lease),
  }
}

/** A task of a page as stored: its id as SQLite reads it, its row's text and its lease's. */
export interface TaskPageRow {
  readonly id: string
  readonly p: string
  readonly l: string | null
}

/** A page of tasks; `next` is where the following one starts, null after the last. */
export interface TaskPageRows {
  readonly rows: TaskPageRow[]
  readonly next: string | null
}

/** A row of a receipt page: its id, and its receipt text if it matches the page's filters. */
export interface ReceiptPageRow {
  readonly id: number
  readonly r: string | null
}

/** A receipt page's rows; `more` when it stopped short of its window at the text budget. */
export interface ReceiptPageRows {
  readonly rows: ReceiptPageRow[]
  readonly more: boolean
}

/** The object's side: plain synchronous SQL, no await between read and write. */
export class GuardTables {
  readonly #sql: SqlStorageLike
  #ready = false

  constructor(sql: SqlStorageLike) {
    this.#sql = sql
  }

  #init(): void {
    if (this.#ready) return
    this.#sql.exec(
      `CREATE TABLE IF NOT EXISTS ${TASKS} (request_id TEXT PRIMARY KEY, payload TEXT NOT NULL, lease TEXT);` +
        `CREATE TABLE IF NOT EXISTS ${STATES} (run_id TEXT PRIMARY KEY, payload TEXT NOT NULL);` +
        `CREATE TABLE IF NOT EXISTS ${RECEIPTS} (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL, ` +
        "ledger TEXT, seq INTEGER, digest TEXT, receipt TEXT NOT NULL, UNIQUE (ledger, seq));" +
        `CREATE TABLE IF NOT EXISTS ${PARTS} (id INTEGER, part INTEGER, text TEXT NOT NULL, PRIMARY KEY (id, part))`,
    )
    this.#ready = true
  }

  taskGet(requestId: string): StoredTask | null {
    this.#init()
    const r = this.#sql
      .exec(`SELECT payload, lease FROM ${TASKS} WHERE request_id = ?`, requestId)
      .toArray()[0]
    return r ? storedTask(requestId, String(r.payload), r.lease as string | null) : null
  }

  taskSwap(requestId: string, expected: string | null, next: TaskRecord): string | null {
    if ((this.taskGet(requestId)?.version ?? null) !== expected) return null
    const payload = JSON.stringify(next.row)
    const lease = next.lease ? JSON.stringify(next.lease) : null
    this.#sql.exec(
      `REPLACE INTO ${TASKS} (request_id, payload, lease) VALUES (?, ?, ?)`,
      requestId,
      payload,
      lease,
    )
    return versionOf(payload, lease)
  }

  /**
   * The tasks in key order after the key `after` (null: from the first), as stored, up to PAGE_TEXT of text. Every
   * task in one answer, each parsed beside its version (its text again), outgrew the 32 MiB an RPC may return: 11
   * tasks of 1.7 MB failed every list().
   */
  taskPage(after: string | null): TaskPageRows {
    this.#init()
    const rows: TaskPageRow[] = []
    let text = 0
    let last = ""
    // Rows, not keys looked up again, and a cursor of the key's bytes (hex): SQLite keeps an id holding an unpaired
    // surrogate as its own key but reads it back with U+FFFD for each byte, another id ('job-\ud800' listed as
    // 'job-\ufffd\ufffd\ufffd': that task twice or null). The payload's JSON keeps the id escaped.
    for (const r of this.#sql.exec(
      `SELECT hex(request_id) AS k, request_id, payload, lease FROM ${TASKS} WHERE request_id ${after === null ? ">=" : ">"} CAST(unhex(?) AS TEXT) ORDER BY request_id`,
      after ?? "",
    )) {
      const row = { id: String(r.request_id), p: String(r.payload), l: r.lease as string | null }
      text += row.id.length + row.p.length + (row.l?.length ?? 0)
      if (rows.length > 0 && text > PAGE_TEXT) return { rows, next: last }
      rows.push(row)
      last = String(r.k)
    }
    return { rows, next: null }
  }

  receiptTail(ledger: string): ChainTail | null {
    this.#init()
    const r = this.#sql
      .exec(`SELECT seq, digest FROM ${RECEIPTS} WHERE ledger = ? ORDER BY seq DESC LIMIT 1`, ledger)
      .toArray()[0]
    // As stored, checked by the client: a digest a raw write emptied was read as "null" and sealed on.
    return r ? { seq: Number(r.seq), digest: r.digest as string } : null
  }

  /** Appends iff the chain's tail is still the one the link was sealed against. */
  receiptAppend(
    receiptText: string,
    agentId: string,
    link: ReceiptLink | null,
    expectedDigest: string | null,
  ): boolean {
    if (link && (this.receiptTail(link.ledger)?.digest ?? null) !== expectedDigest) return false
    this.#init()
    const parts: string[] = []
    for (let i = 0; i < receiptText.length; ) {
      let end = i + PART
      // Never between the halves of a surrogate pair: SQLite would store each half as U+FFFD.
      if (/[\ud800-\udbff]/.test(receiptText[end - 1] ?? "")) end--
      parts.push(receiptText.slice(i, end))
      i = end
    }
    const { id } = this.#sql
      .exec(
        `INSERT INTO ${RECEIPTS} (agent_id, ledger, seq, digest, receipt) VALUES (?, ?, ?, ?, ?) RETURNING id`,
        agentId,
        link?.ledger ?? null,
        link?.seq ?? null,
        link?.digest ?? null,
        parts[0] ?? "",
      )
      .toArray()[0] as { id: number }
    for (let p = 1; p < parts.length; p++)
      this.#sql.exec(`INSERT INTO ${PARTS} (id, part, text) VALUES (?, ?, ?)`, id, p, parts[p] as string)
    return true
  }

  /** The `window` rows after id `after` (fewer past PAGE_TEXT), the receipt text null where the filters do not match. */
  receiptPage(after: number, window: number, agentId: string | null, ledger: string | null): ReceiptPageRows {
    this.#init()
    const rows: ReceiptPageRow[] = []
    let text = 0
    for (const row of this.#sql.exec(
      // A null filter matches every row (IS, not =: an unchained receipt's ledger is NULL).
      `SELECT id, IIF(IFNULL(?, agent_id) = agent_id AND IFNULL(?, ledger) IS ledger, receipt, NULL) AS r FROM ${RECEIPTS} WHERE id > ? ORDER BY id LIMIT ?`,
      agentId,
      ledger,
      after,
      window,
    )) {
      let r = row.r as string | null
      // Only a first part of full length can have more.
      if (r !== null && r.length >= PART - 1)
        for (const p of this.#sql.exec(
          `SELECT text FROM ${PARTS} WHERE id = ? ORDER BY part`,
          row.id as number,
        ))
          r += p.text as string
      text += r?.length ?? 0
      if (rows.length > 0 && text > PAGE_TEXT) return { rows, more: true }
      rows.push({ id: row.id as number, r })
    }
    return { rows, more: false }
  }

  stateLoad(runId: string): StateSnapshot | null {
    this.#init()
    const r = this.#sql.exec(`SELECT payload FROM ${STATES} WHERE run_id = ?`, runId).toArray()[0]
    if (!r) return null
    const s = parseSnapshot(JSON.parse(String(r.payload)))
    if (!s) throw new StateSnapshotError(`snapshot '${runId}' is not a state snapshot`)
    return s
  }

  stateSave(snapshot: StateSnapshot): void {
    this.#init()
    this.#sql.exec(
      `REPLACE INTO ${STATES} (run_id, payload) VALUES (?, ?)`,
      snapshot.run_id,
      JSON.stringify(snapshot),
    )
  }
}

/** The RPC methods MyceliumLedgerObject exposes for these stores. */
export interface GuardObjectRpc {
  taskGet(requestId: string): Promise<StoredTask | null>
  taskSwap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null>
  taskPage(after: string | null): Promise<TaskPageRows>
  stateLoad(runId: string): Promise<StateSnapshot | null>
  stateSave(snapshot: StateSnapshot): Promise<void>
  receiptTail(ledger: string): Promise<ChainTail | null>
  receiptAppend(
    receiptText: string,
    agentId: string,
    link: ReceiptLink | null,
    expectedDigest: string | null,
  ): Promise<boolean>
  receiptPage(
    after: number,
    window: number,
    agentId: string | null,
    ledger: string | null,
  ): Promise<ReceiptPageRows>
}

/** A Durable Object namespace binding (`env.LEDGER`). */
export interface GuardObjectNamespace {
  idFromName(name: string): unknown
  get(id: unknown): unknown
}

export interface DurableObjectGuardStoreOptions {
  /** Object name (one per tenant). Default `mycelium-ledger`: the same object as the tenant's action ledger. */
  readonly name?: string
}

/** What the three store clients share: the namespace and the object's name, and a fresh stub per call. */
abstract class GuardObjectClient {
  readonly #ns: GuardObjectNamespace
  readonly #name: string
  constructor(namespace: GuardObjectNamespace, options: DurableObjectGuardStoreOptions = {}) {
    this.#ns = namespace
    this.#name = options.name ?? "mycelium-ledger"
  }
  // Stubs per call: workerd forbids sharing I/O objects across requests; idFromName + get are local and cheap.
  protected stub(): GuardObjectRpc {
    return this.#ns.get(this.#ns.idFromName(this.#name)) as GuardObjectRpc
  }
}

/** TaskStore client for MyceliumLedgerObject. */
export class DurableObjectTaskStore extends GuardObjectClient implements TaskStore {
  readonly kind = "durable-object"
  // SQLite's 2 MB a value, less a margin, as the object's ledger declares: a bigger result's completion was refused
  // as an outage after the body ran, and once the lease lapsed the next call ran the body again.
  readonly limits = { maxRowBytes: 1_900_000 }
  async get(requestId: string): Promise<StoredTask | null> {
    return await this.stub().taskGet(requestId)
  }
  async swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    return await this.stub().taskSwap(requestId, expected, next)
  }
  /** Page by page, each task's text sent once (its version is built here). */
  async *list(): AsyncIterable<StoredTask> {
    let after: string | null = null
    do {
      const page: TaskPageRows = await this.stub().taskPage(after)
      for (const r of page.rows) yield storedTask(r.id, r.p, r.l)
      after = page.next
    } while (after !== null)
  }
}

/** StateFlushStore client for MyceliumLedgerObject. */
export class DurableObjectStateFlushStore extends GuardObjectClient implements StateFlushStore {
  readonly kind = "durable-object"
  // SQLite's 2 MB a value, less a margin, as the task store's: the object refused a bigger snapshot with a bare
  // SQLITE_TOOBIG, which read as an outage and said nothing of the size or what to do.
  readonly limits = { maxRowBytes: 1_900_000 }
  async load(runId: string): Promise<StateSnapshot | null> {
    return await this.stub().stateLoad(runId)
  }
  async save(snapshot: StateSnapshot): Promise<void> {
    const max = this.limits.maxRowBytes
    // The row holds the run id twice (its key and its JSON); length is a lower bound on UTF-8 bytes.
    const row = snapshot.run_id + JSON.stringify(snapshot)
    const bytes = row.length * 3 > max ? utf8.encode(row).length : 0
    if (bytes > max)
      throw new StateSnapshotTooLargeError(
        `snapshot of run '${snapshot.run_id}' is ${bytes} bytes, over the Durable Object store's limit of ${max} ` +
          "(SQLite's 2 MB a value): record less state, keeping large data elsewhere and a reference to it in the state",
        { runId: snapshot.run_id, bytes, limit: max },
      )
    await this.stub().stateSave(snapshot)
  }
}

/**
 * ReceiptStore client for MyceliumLedgerObject. Sealing signs in the Worker (the object never sees the key), so an
 * append reads the tail, seals, and the object appends only if the tail has not moved (else it seals again).
 * Receipts are kept as text in Python's number forms, so -0.0 and integral floats survive.
 */
export class DurableObjectReceiptStore extends GuardObjectClient implements ReceiptStore {
  readonly kind = "durable-object"
  readonly #queue = chainQueue()
  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    return chain ? this.#queue(chain.ledger, () => this.#tryAppend(record, chain)) : this.#tryAppend(record)
  }
  async #tryAppend(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const stub = this.stub()
      const tail = chain ? await stub.receiptTail(chain.ledger) : null
      // The next receipt, sealed on a tail without its digest, could never verify, whatever repair came after.
      if (tail && typeof tail.digest !== "string")
        throw new ReceiptStoreCorruptError(
          `${RECEIPTS} chain '${chain?.ledger}' seq ${tail.seq} has no digest: set it to that receipt's chain.digest, then retry`,
        )
      const link = chain ? await chain.seal(tail) : null
      const receipt: Receipt = link ? { ...record, chain: link } : { ...record }
      if (await stub.receiptAppend(pythonDumps(receipt), record.agent_id, link, tail?.digest ?? null))
        return receipt
    }
    throw new ReceiptStoreContendedError(record.receipt_id, chain?.ledger ?? "", 50)
  }
  // Page by page: one RPC answer carrying every receipt could outgrow what workerd lets an RPC return.
  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    const out: Receipt[] = []
    let cursor: string | null | undefined
    do {
      const page = await this.listPage({ ...options, limit: 1000, cursor: cursor ?? undefined })
      out.push(...page.receipts)
      cursor = page.cursor
    } while (cursor !== null)
    return out
  }
  /** Cursors are row ids; the object filters in SQL and sends text only for matching rows. */
  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const { rows, more } = await this.stub().receiptPage(
      b.start,
      b.window,
      options.agentId ?? null,
      options.ledger ?? null,
    )
    const page = cutPage(
      rows,
      // A page the object cut at its text budget is a full window: more rows may follow.
      more ? { limit: b.limit, window: rows.length } : b,
      (r) => r.r !== null,
      (i) => String(rows[i]?.id),
    )
    return {
      receipts: page.items.map((r) => readStoredReceipt(r.r, `${RECEIPTS} row ${r.id}`) as Receipt),
      cursor: page.cursor,
    }
  }
}
