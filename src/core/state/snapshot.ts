// The original's StateSnapshot (state_flush.py), stored as its snake_case JSON.
import { isObject } from "../is-object.ts"
import { cloneJson, type JsonValue } from "../ledger/model/canonical.ts"

// Stored values are JSON: the ledger's JSON copy is several times cheaper than structuredClone.
const copy = <T>(v: T): T => cloneJson(v as JsonValue) as T

export type SnapshotStatus = "in-progress" | "completed" | "aborted" | "error"
export type FlushTrigger = "cancel" | "disconnect" | "error"

export interface StateSnapshot {
  readonly run_id: string
  readonly status: SnapshotStatus
  readonly state: Readonly<Record<string, JsonValue>>
  /** Epoch seconds. */
  readonly updated_at: number
  readonly reason: string | null
  readonly error: string | null
}

/** Only the latest snapshot per run is kept (each save overwrites). */
export interface StateFlushStore {
  load(runId: string): Promise<StateSnapshot | null>
  save(snapshot: StateSnapshot): Promise<void>
}

const STATUSES = new Set(["in-progress", "completed", "aborted", "error"])

/** Reads a stored snapshot; null when the value is not one (stores report that as corruption). */
export function parseSnapshot(v: unknown): StateSnapshot | null {
  if (!isObject(v) || typeof v.run_id !== "string" || !STATUSES.has(String(v.status)) || !isObject(v.state))
    return null
  return {
    run_id: v.run_id,
    status: v.status as SnapshotStatus,
    state: v.state as Record<string, JsonValue>,
    updated_at: typeof v.updated_at === "number" ? v.updated_at : 0,
    reason: typeof v.reason === "string" ? v.reason : null,
    error: typeof v.error === "string" ? v.error : null,
  }
}

/** Snapshots in process memory. */
export class MemoryStateFlushStore implements StateFlushStore {
  readonly kind = "memory"
  readonly #snapshots = new Map<string, StateSnapshot>()
  async load(runId: string): Promise<StateSnapshot | null> {
    const s = this.#snapshots.get(runId)
    return s ? copy(s) : null
  }
  async save(snapshot: StateSnapshot): Promise<void> {
    this.#snapshots.set(snapshot.run_id, copy(snapshot))
  }
}
