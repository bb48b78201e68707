// Gate resolution: pure functions of (stored row, binding, now). The claim loops act on what these return.
import type { ToolTransitionBinding } from "../model/binding.ts"
import {
  boundaryAtLeast,
  hasWorkerDeathEvidence,
  type LedgerEntry,
  leaseLapsed,
  needsRepair,
  resolvedOutcome,
} from "../model/entry.ts"
import type { ProviderKeyValidity, TerminalOutcome, TransitionGate } from "../model/enums.ts"

/** How an atomic storage claim treats the stored row. */
export type ClaimClassification = "claimed" | "completed" | "in_flight"

/**
 * The three legacy tables split outcomes the same way: COMPLETED, IN_FLIGHT, ambiguous (BLOCKED or UNKNOWN), and the
 * rest (EXPIRED, FAILED_BEFORE_EFFECT, FAILED_AFTER_EFFECT). Comparisons, not lookup tables: as fast, and smaller.
 */
const byOutcome = <T>(t: TerminalOutcome, completed: T, inFlight: T, ambiguous: T, rest: T): T =>
  t === "COMPLETED"
    ? completed
    : t === "IN_FLIGHT"
      ? inFlight
      : t === "BLOCKED" || t === "UNKNOWN"
        ? ambiguous
        : rest

/**
 * Storage-side classification of an existing row for `tryClaimInflight`. BLOCKED and UNKNOWN rows are never
 * claimable: an ambiguous transition must not be overwritten by a blind claim.
 */
export function classifyClaim(existing: LedgerEntry | null, now: number): ClaimClassification {
  return existing
    ? byOutcome<ClaimClassification>(
        resolvedOutcome(existing, now),
        "completed",
        "in_flight",
        "in_flight",
        "claimed",
      )
    : "claimed"
}

/**
 * Gate for `read` tools. Reads are safe to run again, so anything but live or completed work is reclaimed
 * (ambiguous ones soft-block).
 */
export function resolveReadOnlyGate(existing: LedgerEntry, now: number): TransitionGate {
  return needsRepair(existing)
    ? "REPAIR"
    : byOutcome<TransitionGate>(resolvedOutcome(existing, now), "RETURN", "POLL", "SOFT_BLOCK", "RECLAIM")
}

/**
 * Gate for tools without a binding (`unclassifiedPolicy: "warn"`). Legacy rows are judged as they read: the
 * original's legacy claim (anything not live, completed or ambiguous is reclaimed), except live rows are polled and
 * ambiguous ones refuse loudly instead of being overwritten.
 */
export function resolveUnclassifiedGate(existing: LedgerEntry, now: number): TransitionGate {
  return byOutcome<TransitionGate>(resolvedOutcome(existing, now), "RETURN", "POLL", "HARD_BLOCK", "RECLAIM")
}

/**
 * Gate for a call whose binding is not the one the row was claimed under (engine/identity-checks.ts): its class,
 * spendability or retry permission cannot loosen the row's gate, so it may only replay or wait.
 */
export const resolveForeignGate = (existing: LedgerEntry, now: number): TransitionGate =>
  needsRepair(existing)
    ? "REPAIR"
    : byOutcome<TransitionGate>(resolvedOutcome(existing, now), "RETURN", "POLL", "HARD_BLOCK", "HARD_BLOCK")

/** Re-running a reclaimed unclassified transition may duplicate an effect, except after a lapsed lease. */
export const unclassifiedReclaimWarns = (resolved: TerminalOutcome): boolean => resolved !== "EXPIRED"

/** Whether the provider still honours the idempotency key first sent for this transition. */
export function providerKeyValidity(
  entry: LedgerEntry,
  binding: ToolTransitionBinding,
  now: number,
): ProviderKeyValidity {
  const ttl = binding.providerIdempotencyKeyTtl
  if (ttl === null) return "UNTRACKED"
  const ref = entry.providerKeyFirstAttemptAt ?? entry.startedAt
  if (!ref) return "UNTRACKED"
  return now - ref >= ttl ? "EXPIRED" : "VALID"
}

const keyedClass = (b: ToolTransitionBinding): boolean =>
  b.sideEffectClass === "idempotent_mutate" || b.sideEffectClass === "keyed_mutate"

/** Gate for side-effecting tools (every class but `read`), in the original's order. */
export function resolveSideEffectGate(
  existing: LedgerEntry,
  binding: ToolTransitionBinding,
  incomingProviderKey: string | null,
  now: number,
): TransitionGate {
  if (needsRepair(existing)) return "REPAIR"
  const t = resolvedOutcome(existing, now)
  const b = binding
  const sameKey =
    incomingProviderKey !== null &&
    existing.providerIdempotencyKey !== null &&
    existing.providerIdempotencyKey === incomingProviderKey
  switch (t) {
    case "COMPLETED":
      // Every spendability: a deliberate re-spend needs a new key.
      return "RETURN"
    case "IN_FLIGHT":
      return "POLL"
    case "BLOCKED":
      return "HARD_BLOCK"
    case "UNKNOWN": {
      const ok =
        b.providerIdempotencyKeyParam !== null &&
        b.providerIdempotencyKeyTtl !== null &&
        b.retryPermission === "retry_only_with_same_provider_idempotency_key" &&
        keyedClass(b) &&
        sameKey &&
        providerKeyValidity(existing, b, now) === "VALID"
      return ok ? "ALLOW" : "HARD_BLOCK"
    }
    case "EXPIRED":
      if (boundaryAtLeast(existing.sideEffectBoundary, "maybe_crossed")) return "HARD_BLOCK"
      if (b.spendability !== "multi_use") return "HARD_BLOCK"
      return b.retryPermission === "safe_retry" ? "ALLOW" : "HARD_BLOCK"
    case "FAILED_AFTER_EFFECT":
      return "HARD_BLOCK"
    case "FAILED_BEFORE_EFFECT":
      if (boundaryAtLeast(existing.sideEffectBoundary, "maybe_crossed")) return "HARD_BLOCK"
      switch (b.retryPermission) {
        case "safe_retry":
          return "ALLOW"
        case "retry_only_with_same_provider_idempotency_key":
          if (!keyedClass(b)) return "HARD_BLOCK"
          if (b.providerIdempotencyKeyParam === null) return "ALLOW"
          return sameKey && providerKeyValidity(existing, b, now) !== "EXPIRED" ? "ALLOW" : "HARD_BLOCK"
        default:
          return "HARD_BLOCK"
      }
    default:
      return "HARD_BLOCK"
  }
}

/** UNKNOWN, FAILED_AFTER_EFFECT or a boundary at maybe_crossed or beyond: the effect may have happened. */
export function isAmbiguous(entry: LedgerEntry, now: number): boolean {
  const t = resolvedOutcome(entry, now)
  return (
    t === "UNKNOWN" ||
    t === "FAILED_AFTER_EFFECT" ||
    boundaryAtLeast(entry.sideEffectBoundary, "maybe_crossed")
  )
}

// ---- the death-signal gate ----------------------------------------------------------------------------------

/**
 * Whether an operator's release must first see the owner's death signal (heartbeat silence or a
 * `markWorkerDeadFor` assertion). A lapsed lease says nothing about its owner: dead, or alive and slow (a stalled
 * event loop missed its renewals). `not_executed` lets a redispatch run the effect again, so on a lapsed lease it
 * always waits for the signal: a live late owner would perform the effect a second time. `completed` cannot cause
 * a second run; on an EXPIRED row it keeps the opt-in gate (`reclaimRequiresDeathSignal`) only.
 */
export function releaseNeedsDeathSignal(
  entry: LedgerEntry,
  verified: "completed" | "not_executed",
  now: number,
  reclaimRequiresDeathSignal: boolean,
): boolean {
  if (verified === "not_executed" && leaseLapsed(entry, now)) return true
  return reclaimRequiresDeathSignal && resolvedOutcome(entry, now) === "EXPIRED"
}

/**
 * A reconciler's NOT_EXECUTED says the provider has not seen the call yet, but a lapsed lease's owner may be alive
 * inside its effect and about to make it: the same rule as an operator's `not_executed` release. While this holds
 * the verdict is not acted on (the call hard-blocks).
 */
export function notExecutedWaitsForDeath(
  entry: LedgerEntry,
  now: number,
  presumedDeadAfter: number,
): boolean {
  return leaseLapsed(entry, now) && !hasWorkerDeathEvidence(entry, now, presumedDeadAfter)
}
