// What a caller of testLedgerStorage hands the suite: a factory the suite calls before every case.
import type { LedgerStorage } from "../core/index.ts"

/** One store for one case of the conformance suite. */
export interface StorageFactoryResult {
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
}

/**
 * Called before every case. Request ids are unique per case, so a shared server needs no wipe between cases; a
 * factory may return a fresh store each time or the same one.
 */
export type StorageFactory = () => Promise<StorageFactoryResult> | StorageFactoryResult
