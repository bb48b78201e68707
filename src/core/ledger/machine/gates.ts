// Gate resolution: pure functions of (stored row, binding, now). The claim loops act on what these return.
import type { ToolTransitionBinding } from "../model/binding.ts"
import { boundaryAtLeast, type LedgerEntry, needsRepair, resolvedOutcome } from "../model/entry.ts"
import type { ProviderKeyValidity, TransitionGate } from "../model/enums.ts"

/** How an atomic storage claim treats the stored row. */
export type ClaimClassification = "claimed" | "completed" | "in_flight"

/**
 * Storage-side classification of an existing row for `tryClaimInflight`. BLOCKED and UNKNOWN rows are never
 * claimable: an ambiguous transition must not be overwritten by a blind claim.
 */
export function classifyClaim(existing: LedgerEntry | null, now: number): ClaimClassification {
  if (!existing) return "claimed"
  const t = resolvedOutcome(existing, now)
  switch (t) {
    case "COMPLETED":
      return "completed"
    case "EXPIRED":
    case "FAILED_BEFORE_EFFECT":
    case "FAILED_AFTER_EFFECT":
      return "claimed"
    default:
      return "in_flight"
  }
}

/** Gate for `read` tools: reads are safe to run again, so anything but live or completed work is reclaimed. */
export function resolveReadOnlyGate(existing: LedgerEntry, now: number): TransitionGate {
  if (needsRepair(existing)) return "REPAIR"
  switch (resolvedOutcome(existing, now)) {
    case "COMPLETED":
      return "RETURN"
    case "IN_FLIGHT":
      return "POLL"
    case "BLOCKED":
    case "UNKNOWN":
      return "SOFT_BLOCK"
    default:
      return "RECLAIM"
  }
}

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
