// Task ledger in the Python original's file layout: one JSON object `{request_id: row}` (indent 2) that the
// original's TaskFileLedgerStorage reads and writes. Leases and fences live in the sidecar `<path>.leases.json`
// (`{request_id: lease}`), because the original rejects unknown keys in a row. Both are rewritten under one lock.

import { defineOwn } from "../core/own.ts"
import { clip } from "../core/repr.ts"
import {
  parseTaskLease,
  parseTaskRow,
  type StoredTask,
  type TaskLease,
  type TaskRecord,
  type TaskRow,
} from "../core/tasks/record.ts"
import { recordVersion, type TaskStore } from "../core/tasks/store.ts"
import { LedgerFileCorruptError, type LockedFileOptions } from "./file-kit.ts"
import { LockedFile } from "./file-locked.ts"

export type FileTaskStoreOptions = LockedFileOptions

export class FileTaskStore implements TaskStore {
  readonly kind = "file"
  readonly #rows: LockedFile
  /** The sidecar, written under the rows file's lock: a write of either is refused once that lock is lost. */
  readonly #leases: string

  constructor(path: string, options: FileTaskStoreOptions = {}) {
    this.#rows = new LockedFile(path, options)
    this.#leases = `${this.#rows.path}.leases.json`
  }

  get path(): string {
    return this.#rows.path
  }

  /** Reads without the lock: both files are replaced by rename, so each read sees a whole file. */
  async get(requestId: string): Promise<StoredTask | null> {
    return this.#read(requestId, this.#rows.readDict(), this.#rows.readDict(this.#leases))
  }

  swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    return this.#rows.run(() => {
      const rows = this.#rows.readDict()
      const leases = this.#rows.readDict(this.#leases)
      const current = this.#read(requestId, rows, leases)
      if ((current?.version ?? null) !== expected) return null
      defineOwn(rows, requestId, next.row)
      if (next.lease) defineOwn(leases, requestId, next.lease)
      else delete leases[requestId]
      // A claim's lease goes first: a crash before the row leaves a lease over the old row, which lapses and is
      // reclaimed. A terminal row goes first: a crash before its lease leaves a finished task with a stale lease,
      // which a finished task ignores. One lock check covers both renames, so a lost lock refuses both or neither.
      const files: [Record<string, unknown>, string][] = [
        [leases, this.#leases],
        [rows, this.path],
      ]
      this.#rows.writeDicts(...(next.row.status === "in-flight" ? files : files.reverse()))
      return recordVersion(next)
    })
  }

  async *list(): AsyncIterable<StoredTask> {
    const rows = this.#rows.readDict()
    const leases = this.#rows.readDict(this.#leases)
    for (const id of Object.keys(rows)) {
      const t = this.#read(id, rows, leases)
      if (t) yield t
    }
  }

  #read(
    requestId: string,
    rows: Record<string, unknown>,
    leases: Record<string, unknown>,
  ): StoredTask | null {
    if (!Object.hasOwn(rows, requestId)) return null
    const row: TaskRow | null = parseTaskRow(rows[requestId])
    if (!row)
      throw new LedgerFileCorruptError(this.path, `row '${clip(requestId)}' is not a task ledger entry`)
    // An own key only: a task id `constructor` found the object's prototype member, read as a corrupt lease.
    const rawLease = Object.hasOwn(leases, requestId) ? leases[requestId] : undefined
    const lease: TaskLease | null = rawLease === undefined ? null : parseTaskLease(rawLease)
    if (rawLease !== undefined && !lease)
      throw new LedgerFileCorruptError(this.#leases, `lease '${clip(requestId)}' is not a task lease`)
    const record = { row, lease }
    return { ...record, version: recordVersion(record) }
  }
}
