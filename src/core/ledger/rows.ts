// Pure row transitions: what a mutation writes, given the row the writer holds.
import { type JsonValue, toJsonValue } from "./canonical.ts"
import type { Decision, LedgerEntry } from "./entry.ts"
import { BOUNDARY_RANK, type EffectState, type SideEffectBoundary } from "./enums.ts"

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
