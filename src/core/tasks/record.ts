// The original's TaskLedgerEntry row, and the lease this port keeps beside it.
import { isObject } from "../is-object.ts"
import type { JsonValue } from "../ledger/index.ts"

export type TaskStatus = "in-flight" | "completed" | "failed"

/** A task row exactly as the original stores it (its TaskLedgerEntry fields; it rejects any other key). */
export interface TaskRow {
  readonly request_id: string
  readonly task: string
  readonly args: readonly JsonValue[]
  readonly kwargs: Readonly<Record<string, JsonValue>>
  readonly status: TaskStatus
  readonly result: JsonValue
  readonly error: string | null
  readonly started_at: number
  readonly finished_at: number | null
}

/**
 * What this port adds to a task, stored beside the row (another key, column or sidecar file) so the original
 * still reads the row. The lease applies to the row unless the row is newer than it (a worker of the original
 * re-claimed the task: that claim has no lease).
 */
export interface TaskLease {
  /** +1 on every claim: a takeover changes it, so a stale worker's writes fail. */
  readonly fence: number
  readonly owner: string
  /** null: the task is terminal or was claimed with an unbounded lease. */
  readonly lease_until: number | null
  readonly heartbeat_at: number
  /** `started_at` of the row this lease was taken for. */
  readonly started_at: number
  readonly receipt_ref?: string | null
  readonly resolved_by?: string | null
  readonly resolution_reason?: string | null
  readonly resolved_at?: number | null
}

/** A task as a store holds it. */
export interface TaskRecord {
  readonly row: TaskRow
  readonly lease: TaskLease | null
}

/** A stored task with the store's version token (what `swap` compares). */
export interface StoredTask extends TaskRecord {
  readonly version: string
}

export type TaskState = "completed" | "failed" | "live" | "expired"

/** The lease that governs the row, if any. */
export function leaseOf(t: TaskRecord): TaskLease | null {
  const l = t.lease
  if (!l) return null
  return t.row.started_at > l.started_at ? null : l
}

export function taskState(t: TaskRecord, now: number): TaskState {
  if (t.row.status === "completed") return "completed"
  if (t.row.status === "failed") return "failed"
  const lease = leaseOf(t)
  // An in-flight row without a lease (written by the original) is live until an operator releases it.
  if (!lease || lease.lease_until === null) return "live"
  return now >= lease.lease_until ? "expired" : "live"
}

/** Reads a stored row; `null` when it is not one (the store reports corruption). */
export function parseTaskRow(v: unknown): TaskRow | null {
  if (!isObject(v)) return null
  if (typeof v.request_id !== "string" || typeof v.task !== "string") return null
  if (v.status !== "in-flight" && v.status !== "completed" && v.status !== "failed") return null
  if (typeof v.started_at !== "number") return null
  return {
    request_id: v.request_id,
    task: v.task,
    args: Array.isArray(v.args) ? (v.args as JsonValue[]) : [],
    kwargs: isObject(v.kwargs) ? (v.kwargs as Record<string, JsonValue>) : {},
    status: v.status,
    result: (v.result ?? null) as JsonValue,
    error: typeof v.error === "string" ? v.error : null,
    started_at: v.started_at,
    finished_at: typeof v.finished_at === "number" ? v.finished_at : null,
  }
}

export function parseTaskLease(v: unknown): TaskLease | null {
  if (!isObject(v)) return null
  if (typeof v.fence !== "number" || typeof v.started_at !== "number") return null
  return v as unknown as TaskLease
}
