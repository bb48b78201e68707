// What one atomic step of a backend decides: the claim (insert, take over, or leave) and the compare-and-set test.
// Backends that evaluate in JavaScript (memory, file, IndexedDB, Durable Object) call these inside their atomic
// step; the SQL and Lua backends encode the same rules (see the conformance suite).
import type { ClaimOptions, ClaimResult, TransitionExpectation } from "../../storage/contract.ts"
import { LedgerStaleFenceError } from "../errors.ts"
import type { LedgerEntry } from "../model/entry.ts"
import { type ClaimClassification, classifyClaim } from "./gates.ts"
import { stampClaim } from "./transitions.ts"

/**
 * The whole claim decision for one atomic step: given the stored row, what to return and what to write
 * (`write` is the new row, or null for no write).
 */
export function decideClaim(
  existing: LedgerEntry | null,
  entry: LedgerEntry,
  leaseTtl: number,
  now: number,
  options?: ClaimOptions,
): { result: ClaimResult; write: LedgerEntry | null } {
  const cls = claimVerdict(existing, now, options)
  if (cls !== "claimed") return { result: { outcome: cls, entry: existing as LedgerEntry }, write: null }
  const stamped = stampClaim(entry, existing, leaseTtl, now)
  return { result: { outcome: "claimed", entry: stamped }, write: stamped }
}

/**
 * Whether a claim may write over `existing` (`claimed`), or which row state refuses it. `decideClaim` without the
 * row to write, for a backend that builds that row only when it will store it.
 */
export function claimVerdict(
  existing: LedgerEntry | null,
  now: number,
  options?: ClaimOptions,
): ClaimClassification {
  const cls = classifyClaim(existing, now)
  if (existing && cls === "claimed" && options && "reclaimFence" in options) {
    if (options.reclaimFence === null || options.reclaimFence !== existing.fence) return "in_flight"
  }
  return cls
}

/** The `set()` rule: the stored row's fence when `entry` must be refused as stale, else null. */
export function staleSetFence(stored: LedgerEntry | null, entry: LedgerEntry): number | null {
  const storedFence = stored?.fence ?? 0
  return stored && storedFence > entry.fence ? storedFence : null
}

/** The `set()` rule for backends that decide in JavaScript: call it on the stored row inside the atomic step. */
export function refuseStaleSet(stored: LedgerEntry | null, entry: LedgerEntry): void {
  const storedFence = staleSetFence(stored, entry)
  if (storedFence !== null) throw new LedgerStaleFenceError(entry.requestId, storedFence, entry.fence)
}

/** Whether a stored row satisfies a compare-and-set expectation. */
export function matchesExpectation(stored: LedgerEntry | null, expect: TransitionExpectation): boolean {
  if (!stored) return false
  if (!expect.outcomes.includes(stored.terminalOutcome)) return false
  if (expect.owner != null && stored.owner !== expect.owner) return false
  if ((stored.fence ?? 0) !== expect.fence) return false
  if (expect.effectPhase !== undefined && (stored.effectPhase ?? "INTENDED") !== expect.effectPhase)
    return false
  if (
    expect.sideEffectBoundary !== undefined &&
    (stored.sideEffectBoundary ?? "not_crossed") !== expect.sideEffectBoundary
  )
    return false
  if (
    expect.leaseHeldAt !== undefined &&
    stored.leaseUntil !== null &&
    !(stored.leaseUntil > expect.leaseHeldAt)
  ) {
    return false
  }
  return true
}

/** The dispatch id (`tool_call_id`) a row was claimed under, for drift indexes. */
export function dispatchIdOf(entry: LedgerEntry): string | null {
  const v = entry.kwargs.tool_call_id
  return typeof v === "string" && v ? v : null
}
