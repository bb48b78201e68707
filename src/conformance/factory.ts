// What a caller of a conformance suite hands it: a factory the suite calls before every case, one per kind of store.
import type { LedgerStorage } from "../core/index.ts"
import type { ReceiptStore } from "../receipts.ts"
import type { StateFlushStore } from "../state.ts"
import type { TaskStore } from "../tasks.ts"

/** One store for one case of the conformance suite. */
export interface LedgerStorageFixture {
  /** The store under test. */
  storage: LedgerStorage
  /**
   * A second, independent handle on the same store (another connection or client), if the backend has one. The
   * concurrency cases split their calls between the two and the round-trip cases read back through it. Defaults
   * to `storage`.
   */
  peer?: LedgerStorage
  /** Called once after all of the suite's cases (close connections, drop tables); each result's own cleanup. */
  cleanup?: () => Promise<void> | void
  /**
   * Stores the JSON text as the row at this id, bypassing the adapter (as another process, or the Python
   * original, would write it). Without one, the suite's Python rows go in through `set(entryFromRow(row))`.
   */
  writeRaw?: (requestId: string, json: string) => Promise<void>
  /**
   * For a store that judges leases by a clock of its own (the edge API's store routes): what that clock reads, after
   * each call. Its compare-and-set refuses to end a claim whose bounded lease is live by it, but as its holder
   * (IN_FLIGHT alone expected, at the row's fence), and the model expects that (docs/http-api.md, Store routes).
   */
  leaseClock?: () => number
}

/**
 * Called before every case. Request ids are unique per case, so a shared server needs no wipe between cases; a
 * factory may return a fresh store each time or the same one.
 */
export type LedgerStorageFixtureFactory = () => Promise<LedgerStorageFixture> | LedgerStorageFixture

/** One store for one case of `testTaskStore`. */
export interface TaskStoreFixture {
  /** The task store under test. */
  storage: TaskStore
  /**
   * A second handle on the same store (another connection, another file object), if the backend has one: the
   * races and lease takeovers run one ledger on each. Defaults to `storage`.
   */
  peer?: TaskStore
  /** Called once after all of the suite's cases, for every result the factory returned. */
  cleanup?: () => Promise<void> | void
}

/** Called before every case of `testTaskStore`; task ids are unique per case, so a shared store needs no wipe. */
export type TaskStoreFixtureFactory = () => Promise<TaskStoreFixture> | TaskStoreFixture

/** One store for one case of `testReceiptStore`. */
export interface ReceiptStoreFixture {
  /**
   * The receipt store under test. Most cases count every receipt in it (`list()` with no filter), so each call
   * must give a new, empty store (a fresh database, table or key prefix).
   */
  storage: ReceiptStore
  /** A second handle on the same store (another connection, client or tab). Defaults to `storage`. */
  peer?: ReceiptStore
}

/** Called before every case of `testReceiptStore`, and once more inside one case for a second, empty store. */
export type ReceiptStoreFixtureFactory = () => Promise<ReceiptStoreFixture> | ReceiptStoreFixture

/** One store for one case of `testStateFlush`. */
export interface StateFlushStoreFixture {
  /** The state store under test. */
  storage: StateFlushStore
  /** Another handle on the same store (another process would use one): the cancel case loads through it. */
  peer?: StateFlushStore
}

/** Called before every case of `testStateFlush`; run ids are unique per case, so a shared store needs no wipe. */
export type StateFlushStoreFixtureFactory = () => Promise<StateFlushStoreFixture> | StateFlushStoreFixture
