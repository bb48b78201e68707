import { LedgerError } from "../ledger/index.ts"

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
