// Every row the ledger writes, as a pure function of the row the writer holds. Nothing else in the package builds a
// LedgerEntry to store: the claim loop, fenced writes, operator actions and the backends' atomic claims call these.

import { defineOwn } from "../../own.ts"
import { safeString } from "../../repr.ts"
import type { UnstorableReason } from "../errors.ts"
import type { ToolTransitionBinding } from "../model/binding.ts"
import { type JsonValue, toJsonValue } from "../model/canonical.ts"
import {
  type Decision,
  ENTRY_DEFAULTS,
  LEASE_LAPSED_ERROR,
  type LedgerEntry,
  repairFields,
} from "../model/entry.ts"
import { BOUNDARY_RANK, type SideEffectBoundary, type TerminalOutcome } from "../model/enums.ts"
import { type CallMeta, type TransitionScope, withMetaKwargs } from "../model/identity.ts"
import { UNSTORABLE_MARKER } from "./unstorable.ts"

// ---- claims -------------------------------------------------------------------------------------------------

/** What a fresh in-flight row is made of. */
export interface FreshRowInit {
  readonly tool: string
  readonly requestId: string
  readonly args: Record<string, JsonValue>
  readonly meta: CallMeta
  readonly scope: TransitionScope
  readonly binding: ToolTransitionBinding | null
  readonly effectId: string
  readonly providerKey: string | null
  readonly decision: Decision | null
  readonly prior: LedgerEntry | null
}

/** A fresh, unstamped in-flight row for a call (the storage claim stamps lease and fence: `stampClaim`). */
export function freshRow(owner: string, now: number, init: FreshRowInit): LedgerEntry {
  const carried = init.prior?.providerIdempotencyKey != null ? init.prior.providerKeyFirstAttemptAt : null
  const m = init.meta
  const d = init.decision
  return {
    ...ENTRY_DEFAULTS,
    requestId: init.requestId,
    tool: init.tool,
    kwargs: withMetaKwargs(copyMembers(init.args), m, init.scope),
    startedAt: now,
    owner,
    idempotencyKey: init.requestId,
    sideEffectBoundary: init.binding?.sideEffectBoundaryDefault ?? "not_crossed",
    providerIdempotencyKey: init.providerKey,
    providerKeyFirstAttemptAt: init.providerKey !== null ? (carried ?? now) : null,
    decisionId: m.decisionId ?? null,
    stateRef: m.stateRef ?? null,
    decision: d,
    effectPhase: d ? (d.allowed ? "ATTEMPTING" : "ABORTED") : "INTENDED",
    effectProtocolRequired: init.binding !== null,
    effectId: init.effectId,
    parentRequestId: m.parentRequestId ?? null,
    handoffId: m.handoffId ?? null,
  }
}

/**
 * `{ ...args }`, by assignment: V8 gives a spread copy a map that adding the bookkeeping keys to is several times
 * slower (a measured 5% of a fresh call). `__proto__` is defined, as the spread would.
 */
function copyMembers(args: Readonly<Record<string, JsonValue>>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {}
  for (const k of Object.keys(args)) {
    const v = args[k] as JsonValue
    if (k === "__proto__") defineOwn(out, k, v)
    else out[k] = v
  }
  return out
}

/** The row a successful claim stores: fresh lease, heartbeat, fence one past the prior row's. */
export function stampClaim(
  entry: LedgerEntry,
  prior: LedgerEntry | null,
  leaseTtl: number,
  now: number,
): LedgerEntry {
  return {
    ...entry,
    terminalOutcome: "IN_FLIGHT",
    status: "in-flight",
    leaseUntil: leaseTtl > 0 ? now + leaseTtl : null,
    lastHeartbeatAt: now,
    fence: (prior?.fence ?? 0) + 1,
  }
}

/** The original's field repairs of a legacy or odd row: never invents a result, never renews a lease. */
export function repairedRow(e: LedgerEntry, now: number): LedgerEntry {
  return { ...e, ...repairFields(e, now) }
}

// ---- the owner's writes -------------------------------------------------------------------------------------

/**
 * Results are stored as JSON (Dates as ISO text, undefined dropped), whoever supplies them: body, reconciler, operator.
 * `error` is kept, as the original's `complete()` and `release()` keep it: a row a reconciler or an operator settles
 * still says which failure made it ambiguous (a fresh claim has none).
 */
export function completedRow(e: LedgerEntry, result: unknown, now: number): LedgerEntry {
  return {
    ...e,
    terminalOutcome: "COMPLETED",
    status: "completed",
    result: toJsonValue(result),
    sideEffectBoundary: "crossed",
    leaseUntil: null,
    finishedAt: now,
    effectPhase: "COMMITTED",
  }
}

/**
 * The terminal row recorded when the result is too big, too deep or not JSON for the store: COMPLETED (the effect
 * ran), no result, an error naming the limit. Writing the result would fail after the effect and strand the row.
 */
export function unstorableRow(
  e: LedgerEntry,
  reason: UnstorableReason,
  message: string,
  now: number,
): LedgerEntry {
  return { ...completedRow(e, null, now), error: `${UNSTORABLE_MARKER}[${reason}] ${message}` }
}

/** The outcomes a holder's failure ends its row with. */
export type FailedOutcome = "FAILED_BEFORE_EFFECT" | "FAILED_AFTER_EFFECT" | "UNKNOWN" | "BLOCKED"

/**
 * The owner's lease ends with the outcome (`lease_until` null), as the original's `fail()`, `mark_unknown()` and
 * `mark_blocked()` write their rows, so both sides show a FAILED, UNKNOWN or BLOCKED row alike. The phase stays
 * ATTEMPTING only where the effect may have been attempted under a decision: every outcome but FAILED_BEFORE_EFFECT.
 */
export function failedRow(e: LedgerEntry, outcome: FailedOutcome, error: string, now: number): LedgerEntry {
  const attempted = outcome !== "FAILED_BEFORE_EFFECT"
  return {
    ...e,
    terminalOutcome: outcome,
    status: "failed",
    error,
    sideEffectBoundary: outcome === "FAILED_AFTER_EFFECT" ? "crossed" : e.sideEffectBoundary,
    leaseUntil: null,
    finishedAt: now,
    effectPhase:
      attempted && e.effectProtocolRequired && e.decision !== null && e.effectPhase === "ATTEMPTING"
        ? "ATTEMPTING"
        : "ABORTED",
  }
}

/**
 * A lapsed lease the gates refuse to reclaim becomes BLOCKED (the original's `mark_blocked`, with its texts). No
 * longer IN_FLIGHT, so its late owner's fenced writes all fail; the error text keeps the lapse visible
 * (`leaseLapsed`), so a `not_executed` verdict still needs the owner's death signal.
 */
export function lapsedBlockedRow(e: LedgerEntry, now: number): LedgerEntry {
  const error =
    e.sideEffectBoundary === "not_crossed"
      ? `${LEASE_LAPSED_ERROR} with not_crossed boundary; reclaim only if an external_operation_ref reconcile proves NOT_EXECUTED`
      : `${LEASE_LAPSED_ERROR}; side-effect boundary ${e.sideEffectBoundary} — effect may have happened`
  return failedRow(e, "BLOCKED", error, now)
}

/** Monotonic: a weaker boundary leaves the row's value as it is. */
export function boundaryRow(e: LedgerEntry, b: SideEffectBoundary): LedgerEntry {
  const current = e.sideEffectBoundary
  const stronger = (BOUNDARY_RANK[b] ?? 0) > (BOUNDARY_RANK[current] ?? 0)
  return stronger ? { ...e, sideEffectBoundary: b } : e
}

export function decisionRow(e: LedgerEntry, d: Decision): LedgerEntry {
  return { ...e, decision: d, effectPhase: d.allowed ? "ATTEMPTING" : "ABORTED" }
}

/** Last write wins; any string. */
export function externalRefRow(e: LedgerEntry, ref: string): LedgerEntry {
  return { ...e, externalOperationRef: String(ref) }
}

export function renewedRow(e: LedgerEntry, leaseTtl: number, now: number): LedgerEntry {
  return { ...e, leaseUntil: now + leaseTtl, lastHeartbeatAt: now }
}

/** An outcome row naming the audit receipt signed for it (written in the same compare-and-set as the outcome). */
export function receiptRefRow(e: LedgerEntry, receiptId: string): LedgerEntry {
  return { ...e, receiptRef: receiptId }
}

// ---- operators ----------------------------------------------------------------------------------------------

/** Who settled an ambiguous transition, when, why, and from which outcome. Carried onto the re-execution's row. */
export interface ResolutionStamps {
  readonly resolvedBy: string | null
  readonly resolutionReason: string | null
  readonly resolvedAt: number | null
  readonly releasedFromOutcome: string | null
}

export const stampsOf = (e: LedgerEntry): ResolutionStamps => ({
  resolvedBy: e.resolvedBy,
  resolutionReason: e.resolutionReason,
  resolvedAt: e.resolvedAt,
  releasedFromOutcome: e.releasedFromOutcome,
})

/**
 * A verified release: `completed` stores the result; `not_executed` lets one redispatch run the tool again. An
 * EXPIRED row is still IN_FLIGHT in storage, so `not_executed` blocks it in the same write: the late owner's fenced
 * boundary write (the `sideEffect()` entry) and its completion fail instead of running the effect a second time.
 * The fence moves one up: a `not_executed` verdict on an UNKNOWN row changes nothing else a compare-and-set
 * compares, so a second release racing this one would land on it too (releases are one-shot).
 */
export function releasedRow(
  e: LedgerEntry,
  verified: "completed" | "not_executed",
  result: unknown,
  by: string,
  reason: string,
  releasedFrom: TerminalOutcome,
  now: number,
): LedgerEntry {
  const stamps = {
    resolvedBy: by,
    resolutionReason: reason,
    resolvedAt: now,
    releasedFromOutcome: releasedFrom,
  }
  const base =
    verified === "completed"
      ? completedRow(e, result, now)
      : releasedFrom === "EXPIRED"
        ? lapsedBlockedRow(e, now)
        : e
  return { ...base, operatorResolution: verified, ...stamps, fence: e.fence + 1 }
}

export function workerDeadRow(e: LedgerEntry, by: string, reason: string, now: number): LedgerEntry {
  return { ...e, workerDeadAssertedBy: by, workerDeadAssertedAt: now, resolutionReason: reason }
}

/** What a lapsed lease's row stores: IN_FLIGHT, or EXPIRED itself in a legacy row (or a field repair of one). */
export const LAPSED_OUTCOMES: readonly TerminalOutcome[] = ["IN_FLIGHT", "EXPIRED"]

/**
 * The outcomes an operator release or a reconciler verdict may settle: everything not live and not COMPLETED. A stored
 * EXPIRED (a legacy row) too, or no release could ever settle such a row.
 */
export const RELEASABLE_OUTCOMES: readonly TerminalOutcome[] = [
  "IN_FLIGHT",
  "EXPIRED",
  "BLOCKED",
  "UNKNOWN",
  "FAILED_AFTER_EFFECT",
  "FAILED_BEFORE_EFFECT",
]

// ---- small helpers rows carry ---------------------------------------------------------------------------------

export const ALLOWED_DECISION: Decision = /* @__PURE__ */ Object.freeze({
  allowed: true,
  verdicts: [],
  deniedReasons: [],
})

/** `"{Type}: {message}"`, as the original records errors. */
export function errorText(e: unknown): string {
  // A name or message that is a Symbol or a throwing getter threw here while a failure was being recorded: the row
  // stayed in flight for its whole lease, and the caller got a TypeError instead of its own error.
  try {
    if (e instanceof Error) return `${e.name}: ${e.message}`
  } catch {}
  return `Error: ${safeString(e)}`
}
