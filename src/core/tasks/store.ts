// The task store contract: one compare-and-swap per task. Every claim, renewal, completion and release is decided
// in the core (task-ledger.ts) and written with `swap`, so each backend implements one atomic primitive.
import { canonicalJson, cloneJson, type JsonValue } from "../ledger/model/canonical.ts"
import type { StorageLimits } from "../storage/contract.ts"
import type { StoredTask, TaskRecord } from "./record.ts"

// Stored values are JSON: the ledger's JSON copy is several times cheaper than structuredClone.
const copy = <T>(v: T): T => cloneJson(v as JsonValue) as T

export interface TaskStore {
  get(requestId: string): Promise<StoredTask | null>
  /**
   * Atomically writes `next` iff the task's stored version is still `expected` (`null`: the task must be absent).
   * Returns the new version, or null when another writer got there first (nothing was written).
   */
  swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null>
  list(): AsyncIterable<StoredTask>
  /**
   * `validUnicodeOnly`: the store cannot keep U+0000 or an unpaired surrogate (as `StorageLimits`). The ledger then
   * refuses arguments and ids holding them before the claim, and records a result holding them as unstorable.
   * `maxRowBytes`: the largest row (UTF-8 of its JSON, its id and its lease); arguments too big are refused, a result
   * too big is unstorable, a release too big is refused.
   */
  readonly limits?: Pick<StorageLimits, "validUnicodeOnly" | "maxRowBytes">
}

/** Version token of a record for stores that keep parsed values: its canonical JSON. */
export function recordVersion(record: TaskRecord): string {
  return canonicalJson({ lease: record.lease, row: record.row })
}

/** Tasks in process memory. */
export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory"
  readonly #tasks = new Map<string, { record: TaskRecord; version: string }>()

  async get(requestId: string): Promise<StoredTask | null> {
    const t = this.#tasks.get(requestId)
    return t ? { ...copy(t.record), version: t.version } : null
  }

  async swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    const current = this.#tasks.get(requestId)
    if ((current?.version ?? null) !== expected) return null
    const version = recordVersion(next)
    this.#tasks.set(requestId, { record: copy(next), version })
    return version
  }

  async *list(): AsyncIterable<StoredTask> {
    for (const t of this.#tasks.values()) yield { ...copy(t.record), version: t.version }
  }
}
