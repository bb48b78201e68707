import type { LedgerEntry } from "../ledger/model/entry.ts"
import type { EffectState, SideEffectBoundary, TerminalOutcome } from "../ledger/model/enums.ts"

/** Limits a backend declares (`LedgerStorage.limits`). Omitted fields are unlimited. */
export interface StorageLimits {
  /** Largest stored row, in UTF-8 bytes of its JSON payload. */
  readonly maxRowBytes?: number
  /** Deepest nesting of arrays and objects inside a stored row. */
  readonly maxDepth?: number
  /**
   * Strings must be valid Unicode without U+0000 (Postgres refuses NUL and unpaired surrogates in JSONB; the edge
   * API refuses them for every store). The store refuses a row holding them with `LedgerConfigError` (adapter-kit's
   * `keepableJson`), so arguments holding them are refused before the claim; the ledger completes a result holding
   * them as unstorable. A failure's text is cleaned of them for every store.
   */
  readonly validUnicodeOnly?: boolean
}

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
  /** A reclaim on the holder's heartbeat silence, as `TransitionExpectation.silentFor`. */
  readonly silentFor?: number | undefined
}

/** What a compare-and-set requires of the stored row. */
export interface TransitionExpectation {
  readonly outcomes: readonly TerminalOutcome[]
  readonly owner?: string | null
  readonly fence: number
  readonly effectPhase?: EffectState
  /**
   * The stored row's side-effect boundary must be this one (a row without one reads as `not_crossed`). A holder's
   * writes carry the boundary they were built on, so a concurrent write of the same holder (a renewal racing a
   * boundary move) cannot put the boundary back.
   */
  readonly sideEffectBoundary?: SideEffectBoundary
  /** The lease must be held (or unbounded) at this instant. */
  readonly leaseHeldAt?: number
  /**
   * The writer acts on heartbeat silence as its holder's death: the row's last heartbeat (its start without one) must
   * be at least this many seconds old, unless a worker death is asserted on it. The ledger judged that by its own
   * clock, so a store on that clock may take it as checked; one on a clock of its own (the edge store routes, for
   * HttpLedgerStorage) checks it by that clock.
   */
  readonly silentFor?: number
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
  /**
   * Upsert, for repair tooling, imports and tests (the ledger itself never calls it). One rule, in every backend,
   * in the same atomic step as the write: a row whose fence is lower than the stored row's is refused with
   * `LedgerStaleFenceError` and nothing is written (the Python original's Redis rule). An equal or higher fence,
   * or no stored row, is written as given: set() does not stamp, bump or compare anything else.
   */
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
  /**
   * Rows claimed under this dispatch id (`tool_call_id`), from an index. Enables the cross-row drift gate. Every row
   * now under the id must be found; a row since re-claimed under another id may be found too (an index that only
   * adds), never a row that was not written under it.
   */
  findByDispatchId?(dispatchId: string): Promise<LedgerEntry[]>
  close?(): Promise<void>
}
