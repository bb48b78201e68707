import type { LedgerEntry } from "./entry.ts"
import type { EffectState, TerminalOutcome } from "./enums.ts"
import { type ClaimClassification, classifyClaim } from "./gates.ts"
import type { StorageLimits } from "./result-limits.ts"

export type ClaimResult =
  | {
      readonly outcome: "claimed"
      readonly entry: LedgerEntry
      /**
       * Other rows claimed under `ClaimOptions.dispatchId`, read in the same atomic step as the claim. A backend
       * that leaves it out makes the ledger call `findByDispatchId` instead (one more round trip).
       */
      readonly dispatchSiblings?: readonly LedgerEntry[]
    }
  /** Not claimed: `entry` is the stored row, for the caller's gate to judge. */
  | { readonly outcome: "completed" | "in_flight"; readonly entry: LedgerEntry }

/**
 * Which stored row a claim may take over.
 * - omitted: any claimable row (EXPIRED, FAILED_*), the Python original's storage semantics;
 * - `reclaimFence: null`: insert only, never take over an existing row;
 * - `reclaimFence: n`: take over a claimable row only while its fence is still `n` (the row the gate judged).
 */
export interface ClaimOptions {
  readonly reclaimFence?: number | null
  /** Ask for `dispatchSiblings` on a successful claim (the args-drift gate). */
  readonly dispatchId?: string
}

/** What a compare-and-set requires of the stored row. */
export interface TransitionExpectation {
  readonly outcomes: readonly TerminalOutcome[]
  readonly owner?: string | null
  readonly fence: number
  readonly effectPhase?: EffectState
  /** The lease must be held (or unbounded) at this instant. */
  readonly leaseHeldAt?: number
}

export interface ListOptions {
  /** Only request ids starting with this. */
  readonly prefix?: string
  readonly limit?: number
  /** Resume after this request id (exclusive); rows come in request-id order. */
  readonly cursor?: string
}

/**
 * A ledger backend. `tryClaimInflight` and `tryTransition` must each be one atomic step in the backend
 * (a transaction, a single-threaded object, a Lua script, one conditional SQL statement): no read-then-write.
 * Any failure to reach the store must reject; the ledger turns it into `LedgerStorageUnavailableError`.
 */
export interface LedgerStorage {
  /** What one row may hold; the ledger records an oversized result as such instead of failing the write. */
  readonly limits?: StorageLimits
  get(requestId: string): Promise<LedgerEntry | null>
  /** Upsert. Refuses nothing: only for repair tooling and tests. */
  set(entry: LedgerEntry): Promise<void>
  /** Insert a fresh in-flight row, or take over a claimable one (see ClaimOptions), stamping lease and fence. */
  tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult>
  /** Replace the row with `next` if it still matches `expect`. */
  tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean>
  list(options?: ListOptions): AsyncIterable<LedgerEntry>
  /** Rows claimed under this dispatch id (`tool_call_id`), from an index. Enables the cross-row drift gate. */
  findByDispatchId?(dispatchId: string): Promise<LedgerEntry[]>
  close?(): Promise<void>
}

// ---- shared semantics for backends that evaluate in JavaScript (memory, file, IndexedDB, Durable Object) ----

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
  let cls: ClaimClassification = classifyClaim(existing, now)
  if (existing && cls === "claimed" && options && "reclaimFence" in options) {
    if (options.reclaimFence === null || options.reclaimFence !== existing.fence) cls = "in_flight"
  }
  if (cls !== "claimed") return { result: { outcome: cls, entry: existing as LedgerEntry }, write: null }
  const stamped = stampClaim(entry, existing, leaseTtl, now)
  return { result: { outcome: "claimed", entry: stamped }, write: stamped }
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
    expect.leaseHeldAt !== undefined &&
    stored.leaseUntil !== null &&
    !(stored.leaseUntil > expect.leaseHeldAt)
  ) {
    return false
  }
  return true
}

/** The dispatch id a row was claimed under, for drift indexes. */
export function dispatchIdOf(entry: LedgerEntry): string | null {
  const v = entry.kwargs.tool_call_id
  return typeof v === "string" && v ? v : null
}
