// Audit receipts on Postgres (neon driver). The original has no SQL receipt store, so the table is ours:
// `mycelium_audit_receipts`, one row per receipt: the original's record as its JSONL line (TEXT, so numbers keep
// Python's forms: JSONB would turn -0.0 into 0 and break the signature) and the chain link beside it.
// UNIQUE (ledger, seq) makes a fork impossible: of two appends sealed against the same tail, one inserts and the
// other re-reads the tail and seals again.

import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import {
  AuditReceiptError,
  chainQueue,
  ReceiptStoreContendedError,
  ReceiptStoreCorruptError,
} from "../core/receipts/errors.ts"
import {
  type AuditReceiptRecord,
  type Receipt,
  type ReceiptLink,
  receiptJsonLine,
} from "../core/receipts/record.ts"
import {
  cutPage,
  matchesList,
  pageBounds,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { readStoredReceipt } from "../core/receipts/stored.ts"
import { isUnstorableText } from "../core/storage/text.ts"
import { driverRun, migration, type NeonStoreOptions, type Run, tableName } from "./neon-kit.ts"

export type NeonReceiptStoreOptions = NeonStoreOptions

const APPEND_ROUNDS = 50

const json = (v: unknown): unknown => (typeof v === "string" ? JSON.parse(v) : v)

// An agent id as a column value, written and filtered on: only candidates, the record (JSON escapes) decides. The
// driver sends an unpaired surrogate as U+FFFD (agent 'a\ud800' and 'a\ufffd' share one value), and U+0000, which
// no column holds, failed as if Postgres were down.
const cell = (v: string): string => v.replaceAll("\0", "\ufffd")
const column = (v: string | undefined): string | null => (v === undefined ? null : cell(v))

export class NeonReceiptStore implements ReceiptStore {
  readonly kind = "neon"
  readonly table: string
  readonly #run: Run
  // Quoted in SQL, so a reserved word is a name too.
  readonly #t: string
  readonly #queue = chainQueue()

  constructor(options: NeonReceiptStoreOptions) {
    this.table = tableName(options.table, "mycelium_audit_receipts")
    this.#t = `"${this.table}"`
    this.#run = driverRun(options)
  }

  /** Creates the table if needed (idempotent, safe concurrently). */
  async migrate(): Promise<void> {
    await this.#run(
      migration(
        this.table,
        `CREATE TABLE IF NOT EXISTS ${this.#t} (id BIGSERIAL PRIMARY KEY, receipt_id TEXT NOT NULL UNIQUE, ` +
          "agent_id TEXT NOT NULL, record TEXT NOT NULL, ledger TEXT, seq BIGINT, link JSONB, UNIQUE (ledger, seq));",
      ),
      [],
    )
  }

  async append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    // Keys, unlike the agent id: as U+FFFD two receipt ids would be one (UNIQUE) and two chains share a tail (a gap
    // in each), and U+0000 failed as if Postgres were down. Refused before anything is written.
    const key = isUnstorableText(record.receipt_id)
      ? `receipt id '${record.receipt_id}'`
      : chain && isUnstorableText(chain.ledger)
        ? `chain '${chain.ledger}'`
        : null
    if (key)
      throw new AuditReceiptError(
        `${key} holds U+0000 or an unpaired surrogate, which Postgres cannot keep: name it in valid Unicode`,
      )
    if (!chain) return await this.#tryAppend(record)
    return await this.#queue(chain.ledger, () => this.#tryAppend(record, chain))
  }

  async #tryAppend(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    for (let round = 0; round < APPEND_ROUNDS; round++) {
      let link: ReceiptLink | null = null
      if (chain) {
        const rows = await this.#run(
          `SELECT id, seq, link->>'digest' AS digest FROM ${this.#t} WHERE ledger = $1 ORDER BY seq DESC LIMIT 1`,
          [chain.ledger],
        )
        const row = rows[0]
        // A tail link without its digest was read as "null", and the next receipt sealed on it could never verify.
        if (row && typeof row.digest !== "string")
          throw new ReceiptStoreCorruptError(
            `${this.table} row ${row.id} is not a receipt (its chain link has no digest): repair it, then retry`,
          )
        const tail: ChainTail | null = row ? { seq: Number(row.seq), digest: row.digest as string } : null
        link = await chain.seal(tail)
      }
      // The id is taken at INSERT, visible at COMMIT: without turns, an append holding id 10 could commit after a
      // reader's page had ended past 11, and that reader never saw it. A lock held to COMMIT (released after the
      // row is visible) and taken before the id puts ids in commit order; see docs/receipts.md for the cost.
      const inserted = await this.#run(
        `WITH turn AS (SELECT pg_advisory_xact_lock(hashtext('mycelium-receipts:${this.table}'))) ` +
          `INSERT INTO ${this.#t} (receipt_id, agent_id, record, ledger, seq, link) ` +
          "SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::jsonb FROM turn " +
          "ON CONFLICT (ledger, seq) DO NOTHING RETURNING id",
        [
          record.receipt_id,
          cell(record.agent_id),
          receiptJsonLine(record),
          link?.ledger ?? null,
          link?.seq ?? null,
          link ? JSON.stringify(link) : null,
        ],
      )
      if (inserted.length) return link ? { ...record, chain: link } : { ...record }
    }
    throw new ReceiptStoreContendedError(record.receipt_id, chain?.ledger ?? "", APPEND_ROUNDS)
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    const rows = await this.#run(`SELECT id, record, link FROM ${this.#t} ORDER BY id`, [])
    return rows.map((r) => this.#receipt(r)).filter((r) => matchesList(r, options))
  }

  /**
   * Cursors are row ids. The window's rows (20 x `limit` with a filter) come back with their text only where the
   * agent_id and ledger columns match; the record then decides (see `column`).
   */
  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const rows = await this.#run(
      "SELECT id, hit, CASE WHEN hit THEN record END AS record, CASE WHEN hit THEN link END AS link FROM " +
        "(SELECT id, record, link, ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR ledger = $2) AS hit " +
        `FROM ${this.#t} WHERE id > $3 ORDER BY id LIMIT $4) w ORDER BY id`,
      [column(options.agentId), column(options.ledger), b.start, b.window],
    )
    const page = cutPage(
      rows.map((r) => (r.hit === true ? this.#receipt(r) : null)),
      b,
      (r) => r !== null && matchesList(r, options),
      (i) => String(rows[i]?.id),
    )
    return { receipts: page.items.filter((r) => r !== null), cursor: page.cursor }
  }

  #receipt(r: Record<string, unknown>): Receipt {
    const where = `${this.table} row ${r.id}`
    const record = readStoredReceipt(r.record, where) as AuditReceiptRecord
    const link = json(r.link) as ReceiptLink | null
    // The link column is checked as the record is: a receipt whose link is no link is not handed out as one.
    return link ? (readStoredReceipt({ ...record, chain: link }, where) as Receipt) : record
  }
}
