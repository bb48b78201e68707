// Task ledger on Postgres (neon driver) in the original's table `mycelium_task_ledger (request_id, payload JSONB)`.
// The lease is one more nullable column, `mycelium_lease`, which the original never reads. `swap` is one
// statement: an INSERT … ON CONFLICT DO NOTHING for an absent task, else an UPDATE whose WHERE compares a digest of
// the stored row and lease with the version the caller read (Postgres re-checks it after a concurrent update).

import { clip } from "../core/repr.ts"
import { isUnstorableText, keepableJson } from "../core/storage/text.ts"
import { TaskRowError } from "../core/tasks/errors.ts"
import { parseTaskLease, parseTaskRow, type StoredTask, type TaskRecord } from "../core/tasks/record.ts"
import type { TaskStore } from "../core/tasks/store.ts"
import {
  driverRun,
  migration,
  type NeonStoreOptions,
  type Run,
  tableName,
  withSchemaHint,
} from "./neon-kit.ts"

export { NeonSchemaMissingError } from "./neon-kit.ts"

export type NeonTaskStoreOptions = NeonStoreOptions

const VERSION = `'v' || md5(payload::text || '|' || coalesce(mycelium_lease::text, ''))`

export class NeonTaskStore implements TaskStore {
  readonly kind = "neon"
  // JSONB refuses U+0000 and unpaired surrogates: a completion refused after the body ran stranded the row.
  readonly limits = { validUnicodeOnly: true }
  readonly table: string
  readonly #run: Run
  // Quoted in SQL, so a reserved word is a name too.
  readonly #t: string

  constructor(options: NeonTaskStoreOptions) {
    this.table = tableName(options.table, "mycelium_task_ledger")
    this.#t = `"${this.table}"`
    // A missing table or lease column (the original's table) is NeonSchemaMissingError, naming migrate().
    this.#run = withSchemaHint(driverRun(options), this.table, "task table")
  }

  /** Creates the original's table if needed and adds the lease column (idempotent, safe concurrently). */
  async migrate(): Promise<void> {
    const t = this.#t
    await this.#run(
      migration(
        this.table,
        `CREATE TABLE IF NOT EXISTS ${t} (request_id TEXT PRIMARY KEY, payload JSONB NOT NULL);` +
          ` ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS mycelium_lease JSONB;`,
      ),
      [],
    )
  }

  async get(requestId: string): Promise<StoredTask | null> {
    // No row can have such an id (Postgres refuses its text), and asking for it failed as if Postgres were down.
    if (isUnstorableText(requestId)) return null
    const rows = await this.#run(
      `SELECT payload, mycelium_lease AS lease, ${VERSION} AS v FROM ${this.#t} WHERE request_id = $1`,
      [requestId],
    )
    return rows[0] ? this.#parse(requestId, rows[0]) : null
  }

  async swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    // Refused typed, nothing written (JSONB failed as if Postgres were down): the task ledger checks ids, arguments
    // and results first, but a lease's owner (the ledger's `owner` option) reaches only this write.
    const row = keepableJson(JSON.stringify(next.row), requestId)
    const lease = next.lease ? keepableJson(JSON.stringify(next.lease), requestId) : null
    const rows =
      expected === null
        ? await this.#run(
            `INSERT INTO ${this.#t} (request_id, payload, mycelium_lease) VALUES ($1, $2::jsonb, $3::jsonb) ` +
              `ON CONFLICT (request_id) DO NOTHING RETURNING ${VERSION} AS v`,
            [requestId, row, lease],
          )
        : await this.#run(
            `UPDATE ${this.#t} SET payload = $2::jsonb, mycelium_lease = $3::jsonb ` +
              `WHERE request_id = $1 AND ${VERSION} = $4 RETURNING ${VERSION} AS v`,
            [requestId, row, lease, expected],
          )
    return rows[0] ? String(rows[0].v) : null
  }

  async *list(): AsyncIterable<StoredTask> {
    const rows = await this.#run(
      `SELECT request_id, payload, mycelium_lease AS lease, ${VERSION} AS v FROM ${this.#t} ORDER BY request_id`,
      [],
    )
    for (const r of rows) yield this.#parse(String(r.request_id), r)
  }

  #parse(requestId: string, r: Record<string, unknown>): StoredTask {
    const payload = typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload
    const row = parseTaskRow(payload)
    if (!row)
      throw new TaskRowError(`task row '${clip(requestId)}' in ${this.table} is not a task ledger entry`)
    const raw = typeof r.lease === "string" ? JSON.parse(r.lease) : r.lease
    return { row, lease: raw == null ? null : parseTaskLease(raw), version: String(r.v) }
  }
}
