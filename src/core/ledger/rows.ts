// Pure row transitions: what a mutation writes, given the row the writer holds.

import type { ToolTransitionBinding } from "./binding.ts"
import { type JsonValue, toJsonValue } from "./canonical.ts"
import { type Decision, LEASE_LAPSED_ERROR, type LedgerEntry } from "./entry.ts"
import {
  BOUNDARY_RANK,
  type EffectState,
  LEDGER_ENTRY_SCHEMA_VERSION,
  type SideEffectBoundary,
} from "./enums.ts"
import { type CallMeta, metaToKwargs, type TransitionScope } from "./identity.ts"

export function completedRow(e: LedgerEntry, result: unknown, now: number): LedgerEntry {
  return {
    ...e,
    terminalOutcome: "COMPLETED",
    status: "completed",
    result: toJsonValue(result) as JsonValue,
    error: null,
    sideEffectBoundary: "crossed",
    leaseUntil: null,
    finishedAt: now,
    effectPhase: "COMMITTED",
  }
}

/** After a failure the phase stays ATTEMPTING only where the effect may have been attempted under a decision. */
function phaseAfterFailure(e: LedgerEntry, attempted: boolean): EffectState {
  return attempted && e.effectProtocolRequired && e.decision !== null && e.effectPhase === "ATTEMPTING"
    ? "ATTEMPTING"
    : "ABORTED"
}

export function failedRow(e: LedgerEntry, error: string, now: number, afterEffect: boolean): LedgerEntry {
  return {
    ...e,
    terminalOutcome: afterEffect ? "FAILED_AFTER_EFFECT" : "FAILED_BEFORE_EFFECT",
    status: "failed",
    error,
    sideEffectBoundary: afterEffect ? "crossed" : e.sideEffectBoundary,
    finishedAt: now,
    effectPhase: phaseAfterFailure(e, afterEffect),
  }
}

export function unknownRow(e: LedgerEntry, error: string, now: number): LedgerEntry {
  return {
    ...e,
    terminalOutcome: "UNKNOWN",
    status: "failed",
    error,
    finishedAt: now,
    effectPhase: phaseAfterFailure(e, true),
  }
}

export function blockedRow(e: LedgerEntry, error: string, now: number): LedgerEntry {
  return {
    ...e,
    terminalOutcome: "BLOCKED",
    status: "failed",
    error,
    finishedAt: now,
    effectPhase: phaseAfterFailure(e, true),
  }
}

/** A lapsed lease (EXPIRED row) hard-blocked: no longer IN_FLIGHT, so its late owner's fenced writes all fail. */
export function lapsedBlockedRow(e: LedgerEntry): LedgerEntry {
  const error =
    e.sideEffectBoundary === "not_crossed"
      ? `${LEASE_LAPSED_ERROR} with not_crossed boundary; reclaim only if an external_operation_ref reconcile proves NOT_EXECUTED`
      : `${LEASE_LAPSED_ERROR}; side-effect boundary ${e.sideEffectBoundary} — effect may have happened`
  return {
    ...e,
    terminalOutcome: "BLOCKED",
    status: "failed",
    error,
    effectPhase: e.effectProtocolRequired && e.effectPhase === "ATTEMPTING" ? "ATTEMPTING" : "ABORTED",
  }
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

export const ALLOWED_DECISION: Decision = Object.freeze({ allowed: true, verdicts: [], deniedReasons: [] })

/** `"{Type}: {message}"`, as the original records errors. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}`
  return `Error: ${String(e)}`
}

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

/** A fresh, unstamped in-flight row for a call. */
export function freshRow(owner: string, now: number, init: FreshRowInit): LedgerEntry {
  const carried = init.prior?.providerIdempotencyKey != null ? init.prior.providerKeyFirstAttemptAt : null
  const m = init.meta
  const d = init.decision
  // One literal (the type checker holds it to every LedgerEntry field): this runs on every call.
  return {
    requestId: init.requestId,
    tool: init.tool,
    args: [],
    kwargs: { ...init.args, ...metaToKwargs(m, init.scope) },
    status: "in-flight",
    terminalOutcome: "IN_FLIGHT",
    fence: 0,
    result: null,
    error: null,
    startedAt: now,
    finishedAt: null,
    leaseUntil: null,
    owner,
    idempotencyKey: init.requestId,
    receiptRef: null,
    sideEffectBoundary: init.binding?.sideEffectBoundaryDefault ?? "not_crossed",
    externalOperationRef: null,
    providerIdempotencyKey: init.providerKey,
    providerKeyFirstAttemptAt: init.providerKey !== null ? (carried ?? now) : null,
    lastHeartbeatAt: null,
    workerDeadAssertedBy: null,
    workerDeadAssertedAt: null,
    operatorResolution: null,
    resolvedBy: null,
    resolutionReason: null,
    resolvedAt: null,
    releasedFromOutcome: null,
    decisionId: m.decisionId ?? null,
    stateRef: m.stateRef ?? null,
    decision: d,
    effectPhase: d ? (d.allowed ? "ATTEMPTING" : "ABORTED") : "INTENDED",
    effectProtocolRequired: init.binding !== null,
    effectId: init.effectId,
    schemaVersion: LEDGER_ENTRY_SCHEMA_VERSION,
    parentRequestId: m.parentRequestId ?? null,
    handoffId: m.handoffId ?? null,
  }
}
