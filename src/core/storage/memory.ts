import { claimVerdict, dispatchIdOf, matchesExpectation, refuseStaleSet } from "../ledger/machine/atomic.ts"
import { stampClaim } from "../ledger/machine/transitions.ts"
import type { LedgerEntry } from "../ledger/model/entry.ts"
import { clip } from "../repr.ts"
import type {
  ClaimOptions,
  ClaimResult,
  LedgerStorage,
  ListOptions,
  StorageLimits,
  TransitionExpectation,
} from "./contract.ts"
import { jsonDepth } from "./limits.ts"

/**
 * The ledger's own claim into a store that decides in this process: `tryClaimInflight` with the fresh row built
 * only when the claim will write it. A replay finds its row and never builds the 36-field row it would discard.
 * Not part of the storage contract (backends keep `tryClaimInflight`); `SafeStorage` uses it when
 * `MemoryLedgerStorage.claimsLazily()` says nobody replaced `tryClaimInflight`.
 */
export const CLAIM_BUILT_ON_WRITE: unique symbol = Symbol()

const NO_ROWS: readonly LedgerEntry[] = Object.freeze([])

/** Options of a `MemoryLedgerStorage`. */
export interface MemoryLedgerStorageOptions {
  /** Makes this store refuse what a real backend would (tests of oversized results). */
  limits?: StorageLimits
}

/**
 * Process-local ledger. Each method runs to completion without awaiting, so claim and compare-and-set are atomic
 * on the single JavaScript thread. Rows are immutable objects; nothing stored is shared with callers' mutable data.
 */
export class MemoryLedgerStorage implements LedgerStorage {
  readonly kind = "memory"
  readonly limits?: StorageLimits
  readonly #rows = new Map<string, LedgerEntry>()
  // One id per dispatch is the rule; a Set only when a ticket was reused (drift, or several tools).
  readonly #byDispatch = new Map<string, string | Set<string>>()

  constructor(options: MemoryLedgerStorageOptions = {}) {
    if (options.limits) this.limits = options.limits
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    return this.#rows.get(requestId) ?? null
  }

  async set(entry: LedgerEntry): Promise<void> {
    refuseStaleSet(this.#rows.get(entry.requestId) ?? null, entry)
    this.#put(entry)
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    return this.#claim(entry.requestId, entry, null, leaseTtl, now, options)
  }

  /**
   * Whether the ledger may take the lazy claim on `store`: a real instance (not a Proxy around one) whose
   * `tryClaimInflight` nobody replaced. A subclass or a test that overrides `tryClaimInflight` (fault injection,
   * counting) must see every claim, so it gets the plain path.
   */
  static claimsLazily(store: object): store is MemoryLedgerStorage {
    return #rows in store && (store as MemoryLedgerStorage).tryClaimInflight === memoryTryClaim
  }

  async [CLAIM_BUILT_ON_WRITE](
    requestId: string,
    build: () => LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    return this.#claim(requestId, null, build, leaseTtl, now, options)
  }

  /** `decideClaim` and the write, in one synchronous step; the row comes from `entry` or, when written, `build`. */
  #claim(
    requestId: string,
    entry: LedgerEntry | null,
    build: (() => LedgerEntry) | null,
    leaseTtl: number,
    now: number,
    options: ClaimOptions | undefined,
  ): ClaimResult {
    const existing = this.#rows.get(requestId) ?? null
    const cls = claimVerdict(existing, now, options)
    if (cls !== "claimed") return { outcome: cls, entry: existing as LedgerEntry }
    const write = stampClaim(entry ?? (build as () => LedgerEntry)(), existing, leaseTtl, now)
    this.#put(write)
    if (!options?.dispatchId) return { outcome: "claimed", entry: write }
    return {
      outcome: "claimed",
      entry: write,
      dispatchSiblings: this.#siblings(options.dispatchId, requestId),
    }
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    if (!matchesExpectation(this.#rows.get(next.requestId) ?? null, expect)) return false
    this.#put(next)
    return true
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    // Filtered before sorting: a durable harness run lists its own rows at start, in a store that may hold many runs.
    const keys = [...this.#rows.keys()].filter((k) => k.startsWith(options.prefix ?? "")).sort()
    let n = 0
    for (const k of keys) {
      if (options.cursor !== undefined && k <= options.cursor) continue
      if (options.limit !== undefined && n >= options.limit) return
      n++
      // Read at its turn, not from a snapshot: a row rewritten while the caller held the last one is listed as it is
      // now. Rows are never deleted, so every key still has one.
      yield this.#rows.get(k) as LedgerEntry
    }
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    return this.#dispatchRows(dispatchId)
  }

  /** Rows under `dispatchId` but at another request id: none, nearly always (one id per dispatch is the rule). */
  #siblings(dispatchId: string, requestId: string): readonly LedgerEntry[] {
    const found = this.#byDispatch.get(dispatchId)
    if (found === undefined || found === requestId) return NO_ROWS
    return this.#dispatchRows(dispatchId).filter((e) => e.requestId !== requestId)
  }

  #dispatchRows(dispatchId: string): LedgerEntry[] {
    const found = this.#byDispatch.get(dispatchId)
    if (found === undefined) return []
    const ids = typeof found === "string" ? [found] : [...found]
    // Only ids of stored rows are indexed, and rows are never deleted.
    return ids.map((id) => this.#rows.get(id) as LedgerEntry)
  }

  /** Number of rows stored. */
  get size(): number {
    return this.#rows.size
  }

  #put(entry: LedgerEntry): void {
    if (this.limits) assertWithinLimits(entry, this.limits)
    const prev = this.#rows.get(entry.requestId)
    // Entries are immutable by contract (readonly types; the ledger always writes new objects), so rows are
    // stored as given: copying or freezing them would cost more than the rest of a call.
    this.#rows.set(entry.requestId, entry)
    const d = dispatchIdOf(entry)
    if (d && (!prev || dispatchIdOf(prev) !== d)) {
      const ids = this.#byDispatch.get(d)
      if (ids === undefined) this.#byDispatch.set(d, entry.requestId)
      else if (typeof ids === "string") {
        if (ids !== entry.requestId) this.#byDispatch.set(d, new Set([ids, entry.requestId]))
      } else ids.add(entry.requestId)
    }
  }
}

const memoryTryClaim = MemoryLedgerStorage.prototype.tryClaimInflight

/** Refuses a write as a real backend would (SQLite's JSON depth and row size), so tests see the real failure. */
function assertWithinLimits(entry: LedgerEntry, limits: StorageLimits): void {
  // The entry, not the codec's row: same nesting and values, and the hot path does not load the codec.
  const row = entry
  if (limits.maxDepth !== undefined && jsonDepth(row, limits.maxDepth) > limits.maxDepth)
    throw new Error(`row '${clip(entry.requestId)}' nests deeper than ${limits.maxDepth}`)
  if (limits.maxRowBytes !== undefined) {
    const bytes = new TextEncoder().encode(JSON.stringify(row)).length
    if (bytes > limits.maxRowBytes)
      throw new Error(`row '${clip(entry.requestId)}' is ${bytes} bytes, over ${limits.maxRowBytes}`)
  }
}
