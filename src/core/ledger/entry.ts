import type { JsonValue } from "./canonical.ts"
import {
  BOUNDARY_RANK,
  type EffectState,
  isSideEffectBoundary,
  isTerminalOutcome,
  LEDGER_ENTRY_SCHEMA_VERSION,
  type LeaseValidity,
  type LegacyStatus,
  type OperatorResolution,
  type SideEffectBoundary,
  type TerminalOutcome,
} from "./enums.ts"

/** A durable decision record, written before the body runs. */
export interface Decision {
  readonly allowed: boolean
  readonly verdicts: ReadonlyArray<{
    readonly name: string
    readonly allowed: boolean
    readonly reason: string | null
  }>
  readonly deniedReasons: readonly string[]
}

/**
 * One transition. Immutable: every change makes a new object. Times are epoch seconds.
 * Stored as the Python original's snake_case payload (see `entryToRow`).
 */
export interface LedgerEntry {
  readonly requestId: string
  readonly tool: string
  readonly args: readonly JsonValue[]
  readonly kwargs: Readonly<Record<string, JsonValue>>
  readonly status: LegacyStatus
  readonly terminalOutcome: TerminalOutcome
  readonly fence: number
  readonly result: JsonValue
  readonly error: string | null
  readonly startedAt: number
  readonly finishedAt: number | null
  readonly leaseUntil: number | null
  readonly owner: string | null
  readonly idempotencyKey: string
  readonly receiptRef: string | null
  readonly sideEffectBoundary: SideEffectBoundary
  readonly externalOperationRef: string | null
  readonly providerIdempotencyKey: string | null
  readonly providerKeyFirstAttemptAt: number | null
  readonly lastHeartbeatAt: number | null
  readonly workerDeadAssertedBy: string | null
  readonly workerDeadAssertedAt: number | null
  readonly operatorResolution: OperatorResolution | null
  readonly resolvedBy: string | null
  readonly resolutionReason: string | null
  readonly resolvedAt: number | null
  readonly releasedFromOutcome: string | null
  readonly decisionId: string | null
  readonly stateRef: string | null
  readonly decision: Decision | null
  readonly effectPhase: EffectState
  readonly effectProtocolRequired: boolean
  readonly effectId: string
  readonly schemaVersion: number
  readonly parentRequestId: string | null
  readonly handoffId: string | null
}

/** The stored JSON payload, field for field the Python original's `LedgerEntry.to_dict()`. */
export type LedgerRow = Record<string, JsonValue>

/** Fields an entry needs; the rest default as the original's `from_dict` does. */
export type LedgerEntryInit = Pick<LedgerEntry, "requestId" | "tool"> & Partial<LedgerEntry>

export function newEntry(init: LedgerEntryInit, now: number): LedgerEntry {
  return {
    args: [],
    kwargs: {},
    status: "in-flight",
    terminalOutcome: "IN_FLIGHT",
    fence: 0,
    result: null,
    error: null,
    startedAt: now,
    finishedAt: null,
    leaseUntil: null,
    owner: null,
    idempotencyKey: init.requestId,
    receiptRef: null,
    sideEffectBoundary: "not_crossed",
    externalOperationRef: null,
    providerIdempotencyKey: null,
    providerKeyFirstAttemptAt: null,
    lastHeartbeatAt: null,
    workerDeadAssertedBy: null,
    workerDeadAssertedAt: null,
    operatorResolution: null,
    resolvedBy: null,
    resolutionReason: null,
    resolvedAt: null,
    releasedFromOutcome: null,
    decisionId: null,
    stateRef: null,
    decision: null,
    effectPhase: "INTENDED",
    effectProtocolRequired: false,
    effectId: init.requestId,
    schemaVersion: LEDGER_ENTRY_SCHEMA_VERSION,
    parentRequestId: null,
    handoffId: null,
    ...init,
  }
}

/** Legacy status the original stores beside the terminal outcome. */
export function legacyStatusFor(outcome: TerminalOutcome): LegacyStatus {
  if (outcome === "COMPLETED") return "completed"
  if (outcome === "IN_FLIGHT" || outcome === "EXPIRED") return "in-flight"
  return "failed"
}

// ---- row mapping (snake_case payload) -------------------------------------------------------------------

const FIELD_TO_ROW: ReadonlyArray<readonly [keyof LedgerEntry, string]> = [
  ["requestId", "request_id"],
  ["tool", "tool"],
  ["args", "args"],
  ["kwargs", "kwargs"],
  ["status", "status"],
  ["terminalOutcome", "terminal_outcome"],
  ["fence", "fence"],
  ["result", "result"],
  ["error", "error"],
  ["startedAt", "started_at"],
  ["finishedAt", "finished_at"],
  ["leaseUntil", "lease_until"],
  ["owner", "owner"],
  ["idempotencyKey", "idempotency_key"],
  ["receiptRef", "receipt_ref"],
  ["sideEffectBoundary", "side_effect_boundary"],
  ["externalOperationRef", "external_operation_ref"],
  ["providerIdempotencyKey", "provider_idempotency_key"],
  ["providerKeyFirstAttemptAt", "provider_key_first_attempt_at"],
  ["lastHeartbeatAt", "last_heartbeat_at"],
  ["workerDeadAssertedBy", "worker_dead_asserted_by"],
  ["workerDeadAssertedAt", "worker_dead_asserted_at"],
  ["operatorResolution", "operator_resolution"],
  ["resolvedBy", "resolved_by"],
  ["resolutionReason", "resolution_reason"],
  ["resolvedAt", "resolved_at"],
  ["releasedFromOutcome", "released_from_outcome"],
  ["decisionId", "decision_id"],
  ["stateRef", "state_ref"],
  ["decision", "decision"],
  ["effectPhase", "effect_phase"],
  ["effectProtocolRequired", "effect_protocol_required"],
  ["effectId", "effect_id"],
  ["schemaVersion", "schema_version"],
  ["parentRequestId", "parent_request_id"],
  ["handoffId", "handoff_id"],
]

function decisionToRow(d: Decision | null): JsonValue {
  if (!d) return null
  return {
    allowed: d.allowed,
    verdicts: d.verdicts.map((v) => ({ name: v.name, allowed: v.allowed, reason: v.reason })),
    denied_reasons: [...d.deniedReasons],
  }
}

function decisionFromRow(v: unknown): Decision | null {
  if (!v || typeof v !== "object") return null
  const o = v as Record<string, unknown>
  const verdicts = Array.isArray(o.verdicts) ? o.verdicts : []
  return {
    allowed: o.allowed === true,
    verdicts: verdicts.map((x) => {
      const r = (x ?? {}) as Record<string, unknown>
      return { name: String(r.name ?? ""), allowed: r.allowed === true, reason: (r.reason as string) ?? null }
    }),
    deniedReasons: Array.isArray(o.denied_reasons) ? o.denied_reasons.map(String) : [],
  }
}

/** The Python-compatible payload of an entry (what every durable backend stores). */
export function entryToRow(entry: LedgerEntry): LedgerRow {
  const row: LedgerRow = {}
  for (const [field, key] of FIELD_TO_ROW) {
    row[key] = field === "decision" ? decisionToRow(entry.decision) : (entry[field] as JsonValue)
  }
  return row
}

const str = (v: unknown): string | null => (v == null ? null : String(v))
const num = (v: unknown): number | null => (v == null || v === "" ? null : Number(v))

/** Reads a stored payload, tolerating the original's legacy rows (missing optional keys). */
export function entryFromRow(row: Record<string, unknown>): LedgerEntry {
  const requestId = row.request_id
  const tool = row.tool
  const status = row.status
  if (typeof requestId !== "string" || typeof tool !== "string" || typeof status !== "string") {
    throw new TypeError("ledger row needs string request_id, tool and status")
  }
  const terminal = row.terminal_outcome
  const boundary = row.side_effect_boundary
  return {
    requestId,
    tool,
    args: Array.isArray(row.args) ? (row.args as JsonValue[]) : [],
    kwargs: row.kwargs && typeof row.kwargs === "object" ? (row.kwargs as Record<string, JsonValue>) : {},
    status: status as LegacyStatus,
    // Invalid or missing values stay visible to the repair gate as they are.
    terminalOutcome: (terminal === undefined ? "IN_FLIGHT" : terminal) as TerminalOutcome,
    fence: Number(row.fence ?? 0) || 0,
    result: (row.result ?? null) as JsonValue,
    error: str(row.error),
    startedAt: num(row.started_at) ?? 0,
    finishedAt: num(row.finished_at),
    leaseUntil: num(row.lease_until),
    owner: str(row.owner),
    idempotencyKey: (row.idempotency_key as string) ?? requestId,
    receiptRef: str(row.receipt_ref),
    sideEffectBoundary: (boundary === undefined ? "not_crossed" : boundary) as SideEffectBoundary,
    externalOperationRef: str(row.external_operation_ref),
    providerIdempotencyKey: str(row.provider_idempotency_key),
    providerKeyFirstAttemptAt: num(row.provider_key_first_attempt_at),
    lastHeartbeatAt: num(row.last_heartbeat_at),
    workerDeadAssertedBy: str(row.worker_dead_asserted_by),
    workerDeadAssertedAt: num(row.worker_dead_asserted_at),
    operatorResolution: (str(row.operator_resolution) as OperatorResolution | null) ?? null,
    resolvedBy: str(row.resolved_by),
    resolutionReason: str(row.resolution_reason),
    resolvedAt: num(row.resolved_at),
    releasedFromOutcome: str(row.released_from_outcome),
    decisionId: str(row.decision_id),
    stateRef: str(row.state_ref),
    decision: decisionFromRow(row.decision),
    effectPhase: ((row.effect_phase as string) ?? "INTENDED") as EffectState,
    effectProtocolRequired: row.effect_protocol_required === true,
    effectId: (row.effect_id as string) ?? requestId,
    schemaVersion: Number(row.schema_version ?? 1),
    parentRequestId: str(row.parent_request_id),
    handoffId: str(row.handoff_id),
  }
}

// ---- derived state --------------------------------------------------------------------------------------

export function leaseValidity(entry: LedgerEntry, now: number): LeaseValidity {
  if (entry.leaseUntil === null) return "UNBOUNDED"
  return now >= entry.leaseUntil ? "EXPIRED" : "HELD"
}

/** Stored outcome, except IN_FLIGHT with a lapsed lease reads as EXPIRED. Legacy rows infer from `status`. */
export function resolvedOutcome(entry: LedgerEntry, now: number): TerminalOutcome {
  let t = entry.terminalOutcome
  if (!isTerminalOutcome(t)) t = inferFromStatus(entry, now)
  if (t === "IN_FLIGHT" && entry.leaseUntil !== null && now >= entry.leaseUntil) return "EXPIRED"
  return t
}

function inferFromStatus(entry: LedgerEntry, now: number): TerminalOutcome {
  switch (entry.status) {
    case "completed":
      return "COMPLETED"
    case "failed":
      return "FAILED_BEFORE_EFFECT"
    case "in-flight":
      return entry.leaseUntil !== null && now >= entry.leaseUntil ? "EXPIRED" : "IN_FLIGHT"
    default:
      return "UNKNOWN"
  }
}

export function needsRepair(entry: LedgerEntry): boolean {
  if (!entry.idempotencyKey) return true
  if (!isSideEffectBoundary(entry.sideEffectBoundary)) return true
  if (!isTerminalOutcome(entry.terminalOutcome)) return true
  if (entry.status === "completed" && entry.terminalOutcome !== "COMPLETED") return true
  if (entry.status === "failed" && entry.terminalOutcome === "IN_FLIGHT") return true
  return false
}

/** Only safe updates: never invents a result, never renews a lease. */
export function repairFields(entry: LedgerEntry, now: number): Partial<LedgerEntry> {
  const out: { -readonly [K in keyof LedgerEntry]?: LedgerEntry[K] } = {}
  if (!entry.idempotencyKey) out.idempotencyKey = entry.requestId
  if (!isSideEffectBoundary(entry.sideEffectBoundary)) out.sideEffectBoundary = "not_crossed"
  if (!isTerminalOutcome(entry.terminalOutcome)) {
    out.terminalOutcome = inferFromStatus(entry, now)
    out.status = legacyStatusFor(out.terminalOutcome)
  } else if (entry.status === "completed" && entry.terminalOutcome !== "COMPLETED") {
    out.terminalOutcome = "COMPLETED"
  } else if (entry.status === "failed" && entry.terminalOutcome === "IN_FLIGHT") {
    out.terminalOutcome = "FAILED_BEFORE_EFFECT"
  }
  return out
}

export const boundaryAtLeast = (b: SideEffectBoundary, min: SideEffectBoundary): boolean =>
  (BOUNDARY_RANK[b] ?? 0) >= BOUNDARY_RANK[min]

/** Evidence that the worker behind a lease is gone: an operator's assertion or a silent heartbeat. */
export function hasWorkerDeathEvidence(entry: LedgerEntry, now: number, presumedDeadAfter: number): boolean {
  if (entry.workerDeadAssertedAt !== null) return true
  const last = entry.lastHeartbeatAt ?? entry.startedAt
  if (!last) return false
  return now - last >= presumedDeadAfter
}

/** How a redispatch's error text starts when it hard-blocks a lapsed lease (the Python original's wording too). */
export const LEASE_LAPSED_ERROR = "stale in-flight lease"

/**
 * The owner's lease lapsed without a terminal outcome from it: EXPIRED, or BLOCKED by a redispatch that found it
 * EXPIRED. Derived from existing fields, so rows written by the Python original read the same. Such an owner may
 * be dead or only slow; only a death signal tells which.
 */
export function leaseLapsed(entry: LedgerEntry, now: number): boolean {
  const t = resolvedOutcome(entry, now)
  return t === "EXPIRED" || (t === "BLOCKED" && (entry.error ?? "").startsWith(LEASE_LAPSED_ERROR))
}

export function resolvedEffectState(entry: LedgerEntry, now: number): EffectState {
  const t = resolvedOutcome(entry, now)
  if (t === "COMPLETED") return "COMMITTED"
  if (t === "IN_FLIGHT") {
    if (entry.decision && entry.effectPhase === "ATTEMPTING") return "ATTEMPTING"
    if (entry.decision && entry.effectPhase === "ABORTED") return "ABORTED"
    return "INTENDED"
  }
  const ambiguous =
    t === "UNKNOWN" ||
    t === "FAILED_AFTER_EFFECT" ||
    boundaryAtLeast(entry.sideEffectBoundary, "maybe_crossed")
  return ambiguous ? "UNKNOWN" : "ABORTED"
}

export const hasAllowedDecision = (entry: LedgerEntry): boolean =>
  entry.decision?.allowed === true && entry.effectPhase === "ATTEMPTING"
