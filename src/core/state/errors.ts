import { LedgerError } from "../ledger/index.ts"
import type { SnapshotStatus } from "./snapshot.ts"

/** No flushed state for a run, or a run handle used wrongly. The message names the run. */
export class StateFlushError extends LedgerError {
  override readonly name: string = "StateFlushError"
  override readonly code: string = "state_flush_error"
}

/** A stored snapshot is not a state snapshot. Nothing was resumed; repair or delete it. */
export class StateSnapshotError extends StateFlushError {
  override readonly name = "StateSnapshotError"
  override readonly code = "state_snapshot_invalid"
}

/**
 * The state store could not be reached or answered wrongly (the cause is the driver's error) during `load()`,
 * `resume()`, `checkpoint()` or `flush()`. The run keeps its recorded state: retry the call when the store is back.
 */
export class StateStoreUnavailableError extends StateFlushError {
  override readonly name = "StateStoreUnavailableError"
  override readonly code = "state_store_unavailable"
}

/** A snapshot's size against its store's limit (StateSnapshotTooLargeError's fields). */
export interface StateSnapshotSize {
  readonly runId: string
  /** The row's UTF-8 bytes as the store counts them. */
  readonly bytes: number
  readonly limit: number
}

/**
 * A snapshot over its store's row limit (a Durable Object's SQLite keeps at most 2 MB a value), refused before the
 * write: the store keeps the run's earlier snapshot. The message says the limit and what to do.
 */
export class StateSnapshotTooLargeError extends StateFlushError implements StateSnapshotSize {
  override readonly name = "StateSnapshotTooLargeError"
  override readonly code = "state_snapshot_too_large"
  declare readonly runId: string
  declare readonly bytes: number
  declare readonly limit: number

  constructor(message: string, size: StateSnapshotSize) {
    super(message)
    Object.assign(this, size)
  }
}

/** How a run ended whose final snapshot was not stored (StateSnapshotUnstoredError's fields). */
export interface StateRunEnding {
  readonly runId: string
  /** The status of the snapshot that was not stored. */
  readonly status: SnapshotStatus
  /** True when the body returned: its work is done, `result` is what it returned. */
  readonly returned: boolean
  readonly result?: unknown
  /** The cancel or disconnect signal's reason, when one ended the run. */
  readonly abortReason?: unknown
}

/**
 * The run ended (it returned, or was cancelled or disconnected) but its final snapshot could not be stored; the
 * store's error is the cause, and the store still holds the snapshot before it, if any.
 */
export class StateSnapshotUnstoredError extends StateFlushError implements StateRunEnding {
  override readonly name = "StateSnapshotUnstoredError"
  override readonly code = "state_snapshot_unstored"
  declare readonly runId: string
  declare readonly status: SnapshotStatus
  declare readonly returned: boolean
  declare readonly result: unknown
  declare readonly abortReason: unknown

  constructor(message: string, ending: StateRunEnding, cause: unknown) {
    super(message, { cause })
    Object.assign(this, ending)
  }
}
