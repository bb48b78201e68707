import { LedgerStorageUnavailableError } from "../ledger/errors.ts"
import type { LedgerEntry } from "../ledger/model/entry.ts"
import type {
  ClaimOptions,
  ClaimResult,
  LedgerStorage,
  ListOptions,
  TransitionExpectation,
} from "./contract.ts"
import { CLAIM_BUILT_ON_WRITE, MemoryLedgerStorage } from "./memory.ts"
import { guardStoreCall, storeFailure } from "./store-failure.ts"

/**
 * Fail-closed view of a backend: any failure that is not already a ledger decision becomes
 * `LedgerStorageUnavailableError`, so no tool body runs without a durable claim.
 */
export class SafeStorage {
  readonly inner: LedgerStorage
  readonly canFindByDispatchId: boolean

  constructor(inner: LedgerStorage) {
    this.inner = inner
    this.canFindByDispatchId = typeof inner.findByDispatchId === "function"
  }

  get(requestId: string): Promise<LedgerEntry | null> {
    return guard("get", () => this.inner.get(requestId))
  }

  set(entry: LedgerEntry): Promise<void> {
    return guard("set", () => this.inner.set(entry))
  }

  tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    return guard("try_claim_inflight", () => this.inner.tryClaimInflight(entry, leaseTtl, now, options))
  }

  /** `tryClaimInflight(build(), ...)`; a backend that decides in this process builds the row only to write it. */
  claim(
    requestId: string,
    build: () => LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    // Checked per call: a test or wrapper may replace tryClaimInflight after the ledger was made.
    const inner = this.inner
    if (!MemoryLedgerStorage.claimsLazily(inner))
      return this.tryClaimInflight(build(), leaseTtl, now, options)
    return guard("try_claim_inflight", () =>
      inner[CLAIM_BUILT_ON_WRITE](requestId, build, leaseTtl, now, options),
    )
  }

  tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    return guard("try_transition", () => this.inner.tryTransition(next, expect))
  }

  findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    return guard("find_by_dispatch_id", async () => (await this.inner.findByDispatchId?.(dispatchId)) ?? [])
  }

  async *list(options?: ListOptions): AsyncIterable<LedgerEntry> {
    try {
      yield* this.inner.list(options)
    } catch (e) {
      throw storeFailure(STORE, "list_all", e, LedgerStorageUnavailableError)
    }
  }
}

const STORE = "ledger storage"

function guard<T>(op: string, fn: () => Promise<T>): Promise<T> {
  return guardStoreCall(STORE, op, fn, LedgerStorageUnavailableError)
}
