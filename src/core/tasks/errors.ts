import { LedgerError } from "../ledger/index.ts"
import { errorText } from "../ledger/machine/transitions.ts"
import { clip } from "../repr.ts"

/** Root of the task ledger's errors. */
export class TaskLedgerError extends LedgerError {
  override readonly name: string = "TaskLedgerError"
  override readonly code: string = "task_ledger_error"
}

/**
 * The task store could not be reached or answered wrongly (the cause is the driver's error). Nothing ran that was
 * not recorded: a claim that failed ran no body. Retry when the store is back.
 */
export class TaskStoreUnavailableError extends TaskLedgerError {
  override readonly name = "TaskStoreUnavailableError"
  override readonly code = "task_store_unavailable"
}

/** Another worker holds a live lease on this task. Retry later, pass `wait: true`, or release it as an operator. */
export class TaskLedgerPendingError extends TaskLedgerError {
  override readonly name = "TaskLedgerPendingError"
  override readonly code = "task_ledger_pending"
  readonly requestId: string
  constructor(message: string, requestId: string) {
    super(message)
    this.requestId = requestId
  }
}

/**
 * This worker's claim was taken over (its lease lapsed and another worker reclaimed the task, or an operator released
 * it), or its lease would lapse before a renewal could prove it.
 */
export class TaskLeaseLostError extends TaskLedgerError {
  override readonly name = "TaskLeaseLostError"
  override readonly code = "task_lease_lost"
}

/** An operator release was refused: the message says what state the task is in and what to do. */
export class TaskReleaseRefusedError extends TaskLedgerError {
  override readonly name = "TaskReleaseRefusedError"
  override readonly code = "task_release_refused"
}

/** A stored task row is not the original's task ledger entry. Nothing was run; repair or delete the row. */
export class TaskRowError extends TaskLedgerError {
  override readonly name = "TaskRowError"
  override readonly code = "task_row_invalid"
}

/**
 * A task body returned what cannot be stored as JSON (a cycle, or nesting too deep to convert). The task is recorded
 * failed, so the next call runs it again; return plain JSON from the body.
 */
export class TaskResultUnstorableError extends TaskLedgerError {
  override readonly name = "TaskResultUnstorableError"
  override readonly code = "task_result_unstorable"
}

/**
 * An `id_from` value contains `:<field>=`, so the request id would equal another argument set's (the original's ids
 * are unescaped). Nothing was claimed or run; pass a value without it, or an explicit `task_id`.
 */
export class TaskIdAmbiguousError extends TaskLedgerError {
  override readonly name = "TaskIdAmbiguousError"
  override readonly code = "task_id_ambiguous"
}

/**
 * The task's outcome is recorded, but the receipt hook could not sign it (a signer outage). Later calls replay the
 * stored outcome; the row has no `receipt_ref`. The original also records first and signs after.
 */
export class TaskReceiptUnsignedError extends TaskLedgerError {
  override readonly name = "TaskReceiptUnsignedError"
  override readonly code = "task_receipt_unsigned"
  readonly requestId: string
  constructor(requestId: string, status: "completed" | "failed", cause: unknown) {
    super(
      `Task request '${clip(requestId)}' is recorded as ${status}, but its receipt could not be signed ` +
        `(${errorText(cause)}); later calls replay ` +
        "the stored outcome. Restore the signer; this outcome has no receipt.",
      { cause },
    )
    this.requestId = requestId
  }
}
