import { LedgerRowError } from "../errors.ts"
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

/** Legacy status the original stores beside the terminal outcome. */
export function legacyStatusFor(outcome: TerminalOutcome): LegacyStatus {
  if (outcome === "COMPLETED") return "completed"
  if (outcome === "IN_FLIGHT" || outcome === "EXPIRED") return "in-flight"
  return "failed"
}

// ---- the one field list: entry field ↔ snake_case payload key, and how a stored value is read back -------------

interface FieldCodec<T> {
  readonly key: string
  /** Reads the stored value (`undefined` when the key is missing, as in the original's legacy rows). */
  readonly decode: (v: unknown, row: Readonly<Record<string, unknown>>) => T
  /** What is stored; the entry's value itself when omitted. */
  readonly encode?: (v: T) => JsonValue
}

const str = (v: unknown): string | null => (v == null ? null : String(v))
const num = (v: unknown): number | null => (v == null || v === "" ? null : Number(v))

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

/**
 * How each `LedgerEntry` field is read back, in the original's `to_dict()` order. Its payload key is the field's
 * name in snake_case (`providerKeyFirstAttemptAt` is `provider_key_first_attempt_at`), which holds for every field
 * of the original; `satisfies` makes a field missing here (or one that is not on `LedgerEntry`) a type error, so
 * the codec cannot fall behind.
 */
const DECODERS = {
  requestId: (v) => v as string,
  tool: (v) => v as string,
  args: (v) => (Array.isArray(v) ? (v as JsonValue[]) : []),
  kwargs: (v) => (v && typeof v === "object" ? (v as Record<string, JsonValue>) : {}),
  status: (v) => v as LegacyStatus,
  // Invalid or missing values stay visible to the repair gate as they are.
  terminalOutcome: (v) => (v === undefined ? "IN_FLIGHT" : v) as TerminalOutcome,
  fence: (v) => Number(v ?? 0) || 0,
  result: (v) => (v ?? null) as JsonValue,
  error: str,
  startedAt: (v) => num(v) ?? 0,
  finishedAt: num,
  leaseUntil: num,
  owner: str,
  idempotencyKey: (v, row) => (v ?? row.request_id) as string,
  receiptRef: str,
  sideEffectBoundary: (v) => (v === undefined ? "not_crossed" : v) as SideEffectBoundary,
  externalOperationRef: str,
  providerIdempotencyKey: str,
  providerKeyFirstAttemptAt: num,
  lastHeartbeatAt: num,
  workerDeadAssertedBy: str,
  workerDeadAssertedAt: num,
  operatorResolution: str as (v: unknown) => OperatorResolution | null,
  resolvedBy: str,
  resolutionReason: str,
  resolvedAt: num,
  releasedFromOutcome: str,
  decisionId: str,
  stateRef: str,
  decision: decisionFromRow,
  effectPhase: (v) => ((v as string) ?? "INTENDED") as EffectState,
  effectProtocolRequired: (v) => v === true,
  effectId: (v, row) => (v ?? row.request_id) as string,
  // A row without a version predates versioning: schema 1.
  schemaVersion: (v) => Number(v ?? 1),
  parentRequestId: str,
  handoffId: str,
} satisfies { readonly [K in keyof LedgerEntry]-?: FieldCodec<LedgerEntry[K]>["decode"] }

/** Every `LedgerEntry` field with its payload key and reader, in the original's `to_dict()` order. */
export const ENTRY_FIELDS: { readonly [K in keyof LedgerEntry]-?: FieldCodec<LedgerEntry[K]> } =
  /* @__PURE__ */ codecs()

function codecs(): never {
  return Object.fromEntries(
    Object.entries(DECODERS).map(([field, decode]) => [
      field,
      {
        key: field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
        decode,
        ...(field === "decision" && { encode: decisionToRow }),
      },
    ]),
  ) as never
}

const CODECS = /* @__PURE__ */ Object.entries(ENTRY_FIELDS) as ReadonlyArray<
  readonly [keyof LedgerEntry, FieldCodec<unknown>]
>

/** The Python-compatible payload of an entry (what every durable backend stores). */
export function entryToRow(entry: LedgerEntry): LedgerRow {
  const row: LedgerRow = {}
  for (const [field, c] of CODECS)
    row[c.key] = c.encode ? c.encode(entry[field]) : (entry[field] as JsonValue)
  return row
}

/** Reads a stored payload, tolerating the original's legacy rows (missing optional keys). */
export function entryFromRow(row: Readonly<Record<string, unknown>>): LedgerEntry {
  if (typeof row.request_id !== "string" || typeof row.tool !== "string" || typeof row.status !== "string") {
    throw new LedgerRowError("ledger row needs string request_id, tool and status")
  }
  const out: Record<string, unknown> = {}
  for (const [field, c] of CODECS) out[field] = c.decode(row[c.key], row)
  return out as unknown as LedgerEntry
}

/**
 * Every field at the value a new row starts with (what `entryFromRow` reads for a missing key, except the current
 * schema version). Kept as a literal so the ledger's hot path does not pull the codec into every bundle; a test
 * holds it equal to the codec's defaults.
 */
export const ENTRY_DEFAULTS: LedgerEntry = {
  requestId: "",
  tool: "",
  args: [],
  kwargs: {},
  status: "in-flight",
  terminalOutcome: "IN_FLIGHT",
  fence: 0,
  result: null,
  error: null,
  startedAt: 0,
  finishedAt: null,
  leaseUntil: null,
  owner: null,
  idempotencyKey: "",
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
  effectId: "",
  schemaVersion: LEDGER_ENTRY_SCHEMA_VERSION,
  parentRequestId: null,
  handoffId: null,
}

/** A new entry: every field at its default, plus `init`. */
export function newEntry(init: LedgerEntryInit, now: number): LedgerEntry {
  return {
    ...ENTRY_DEFAULTS,
    idempotencyKey: init.requestId,
    effectId: init.requestId,
    startedAt: now,
    ...init,
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
  if (!isTerminalOutcome(t)) t = inferFromStatus(entry.status)
  if (t === "IN_FLIGHT" && entry.leaseUntil !== null && now >= entry.leaseUntil) return "EXPIRED"
  return t
}

function inferFromStatus(status: LegacyStatus): TerminalOutcome {
  switch (status) {
    case "completed":
      return "COMPLETED"
    case "failed":
      return "FAILED_BEFORE_EFFECT"
    case "in-flight":
      return "IN_FLIGHT"
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
    // From the legacy status, EXPIRED where an in-flight row's lease lapsed.
    out.terminalOutcome = resolvedOutcome(entry, now)
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

/**
 * The heartbeat silence after which a reader counts `entry`'s holder dead: `presumedDeadAfter` as given; by default
 * never less than twice the lease the holder was last granted (every ledger's default), since the row does not say
 * the holder's settings. A reader with a shorter lease (an operator's ledger) judged a slower ledger's live worker
 * dead by its own default, released its payment as not executed, and the redispatch paid while the holder still did.
 */
export const deadAfter = (
  e: LedgerEntry,
  policy: { presumedDeadAfter: number; presumedDeadAfterSet: boolean },
) =>
  policy.presumedDeadAfterSet || e.leaseUntil === null || e.lastHeartbeatAt === null
    ? policy.presumedDeadAfter
    : Math.max(policy.presumedDeadAfter, 2 * (e.leaseUntil - e.lastHeartbeatAt))

/** Evidence that the worker behind a lease is gone: an operator's assertion or a silent heartbeat. */
export function hasWorkerDeathEvidence(entry: LedgerEntry, now: number, presumedDeadAfter: number): boolean {
  if (entry.workerDeadAssertedAt !== null) return true
  // A row held on an unbounded lease is never renewed, so its silence says nothing, whatever the reader's policy.
  if (entry.leaseUntil === null && entry.terminalOutcome === "IN_FLIGHT") return false
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
