// Error classes keep a stable `name` (survives minification) and a `code` that HTTP and logs can rely on.
import { MyceliumError } from "../errors.ts"
import { clip } from "../repr.ts"

/** Root of the ledger's errors. */
export class LedgerError extends MyceliumError {
  override readonly name: string = "LedgerError"
  override readonly code: string = "ledger_error"
}

/** An `ActionLedger` option or a ledger call's argument is invalid. Nothing was claimed or written. */
export class LedgerConfigError extends LedgerError {
  override readonly name: string = "LedgerConfigError"
  override readonly code: string = "invalid_option"
}

/**
 * A stored payload is not a ledger row (no string `request_id`, `tool` and `status`). Repair or delete the row.
 * A storage-level failure, not a ledger decision: the ledger reports it as `LedgerStorageUnavailableError`.
 */
export class LedgerRowError extends MyceliumError {
  override readonly name = "LedgerRowError"
  override readonly code = "ledger_row_invalid"
}

/** The lease cannot be renewed: it already lapsed (reclaim or reconcile instead) or the ttl is not positive. */
export class LedgerLeaseError extends LedgerError {
  override readonly name = "LedgerLeaseError"
  override readonly code = "ledger_lease_expired"
}

/** No transition is stored under this request id (a typo, another tenant's id, or a row never claimed). */
export class LedgerUnknownRequestError extends LedgerError {
  override readonly name = "LedgerUnknownRequestError"
  override readonly code = "ledger_unknown_request"
}

/** Redispatch of an ambiguous or spent transition: a human or a reconciler must decide. */
export class LedgerHardBlockError extends LedgerError {
  override readonly name = "LedgerHardBlockError"
  override readonly code = "ledger_hard_block"
}

/** A read-only transition is BLOCKED/UNKNOWN and the ledger was told to defer instead of re-running it. */
export class LedgerSoftBlockError extends LedgerError {
  override readonly name = "LedgerSoftBlockError"
  override readonly code = "ledger_soft_block"
}

/** Waiting for another worker's transition took longer than `pollTimeout`. The row is left untouched. */
export class LedgerPollTimeoutError extends LedgerError {
  override readonly name = "LedgerPollTimeoutError"
  override readonly code = "ledger_poll_timeout"
}

export class LedgerReleaseRefusedError extends LedgerError {
  override readonly name = "LedgerReleaseRefusedError"
  override readonly code = "ledger_release_refused"
}

/** An operator release was already applied (releases are one-shot), or the transition moved on. */
export class LedgerAlreadyResolvedError extends LedgerError {
  override readonly name = "LedgerAlreadyResolvedError"
  override readonly code = "ledger_already_resolved"
}

/** A fenced compare-and-set lost: the row has another outcome, owner, fence or phase than the caller holds. */
export class LedgerOutcomeAlreadySetError extends LedgerError {
  override readonly name = "LedgerOutcomeAlreadySetError"
  override readonly code = "ledger_outcome_already_set"
}

/**
 * `set()` was handed a row with a lower fence than the stored one: a writer acting on a claim that has since been
 * taken over. Nothing was written. Every backend refuses it (see `LedgerStorage.set`).
 */
export class LedgerStaleFenceError extends LedgerError {
  override readonly name = "LedgerStaleFenceError"
  override readonly code = "ledger_stale_fence"
  /** `storedFence` null: the backend (a remote one) did not say which. */
  constructor(requestId: string, storedFence: number | null, fence: number) {
    super(
      `set() refused for '${requestId}': the stored fence${storedFence === null ? "" : ` ${storedFence}`} is newer than ${fence} ` +
        "(a later claim owns the row); nothing was written. Re-read it with get().",
    )
  }
}

/** The worker holding a lease still looks alive; releasing or reclaiming now could run the effect twice. */
export class LedgerWorkerAliveError extends LedgerError {
  override readonly name = "LedgerWorkerAliveError"
  override readonly code = "ledger_worker_alive"
}

/** The store could not be reached or answered wrongly. The ledger fails closed: the tool does not run. */
export class LedgerStorageUnavailableError extends LedgerError {
  override readonly name = "LedgerStorageUnavailableError"
  override readonly code = "ledger_storage_unavailable"
}

/**
 * A dispatch id holds more rows than one call may read (drifted re-sends of large arguments pile up under it). The
 * drift check must see every one, so the call is refused and nothing runs; a new tool-call id is not affected.
 */
export class LedgerDispatchOverflowError extends LedgerError {
  override readonly name = "LedgerDispatchOverflowError"
  override readonly code = "dispatch_rows_over_budget"
  constructor(dispatchId: string) {
    super(`dispatch id '${clip(dispatchId)}': too many rows to check`)
  }
}

/** A consequential call has no server-owned identity and the policy requires one. Nothing was claimed. */
export class MissingRequestIdentityError extends LedgerError {
  override readonly name = "MissingRequestIdentityError"
  override readonly code = "missing_request_identity"
  readonly tool: string
  readonly field: string | null
  constructor(tool: string, field: string | null = null) {
    super(
      field
        ? `Tool '${tool}' takes its request_id from '${field}', which is missing or empty: pass it. Nothing ran.`
        : `Tool '${tool}' needs a business-key request_id (require_explicit): pass requestId (e.g. ` +
            `"${tool}:{order_id}") or set requestIdFrom. Nothing ran.`,
    )
    this.tool = tool
    this.field = field
  }
}

/** A declared capability is looser than the side-effect class allows. */
export class ToolCapabilityDeclarationError extends LedgerConfigError {
  override readonly name = "ToolCapabilityDeclarationError"
  override readonly code = "tool_capability_declaration"
}

/** The request ids a `LedgerIdentityConflictError` names: the row's, and the one this call derived. */
export interface LedgerIdentityConflictErrorInit {
  readonly priorRequestId?: string
  readonly requestId?: string
}

/**
 * A redispatch reused an identity with other arguments, tool or scope, or a row under the same tool-call id has a
 * key this call does not derive. The body did not run. `priorRequestId` / `requestId` name both keys.
 */
export class LedgerIdentityConflictError extends LedgerError {
  override readonly name = "LedgerIdentityConflictError"
  override readonly code = "args_drift"
  readonly violation = "args_drift"
  readonly llmMessage: string
  readonly priorRequestId: string | null
  readonly requestId: string | null
  constructor(message: string, tool: string, keys: LedgerIdentityConflictErrorInit = {}) {
    super(message)
    this.priorRequestId = keys.priorRequestId ?? null
    this.requestId = keys.requestId ?? null
    this.llmMessage =
      `Identity conflict: '${tool}' was claimed with other arguments, tool or scope for this dispatch ticket; it ` +
      "did not run. Reuse the original identity, or mint a new request_id / tool_call_id."
  }
}

/** Which store limit a result broke: not JSON, nested too deep, or a row too large. */
export type UnstorableReason = "not_serializable" | "max_depth" | "max_row_bytes"

/**
 * The call completed but its result was too big, too deep or not JSON for the store: the row is COMPLETED without a
 * result, and every replay raises this instead of running the effect again. `limit` names the limit.
 */
export class LedgerResultUnstorableError extends LedgerError {
  override readonly name = "LedgerResultUnstorableError"
  override readonly code = "ledger_result_unstorable"
  readonly limit: UnstorableReason
  constructor(message: string, limit: UnstorableReason) {
    super(message)
    this.limit = limit
  }
}

/** The outcome was written (its row names the receipt) but the receipt could not be stored. */
export class ReceiptAppendError extends LedgerError {
  override readonly name = "ReceiptAppendError"
  override readonly code = "receipt_append_failed"
  readonly receiptId: string
  readonly requestId: string
  constructor(requestId: string, receiptId: string, cause: unknown) {
    super(
      `Request '${clip(requestId)}' is recorded (receipt_ref ${receiptId}) but its receipt was not stored: ` +
        `${cause instanceof Error ? cause.message : String(cause)}. Restore the receipt store.`,
      { cause },
    )
    this.receiptId = receiptId
    this.requestId = requestId
  }
}

/**
 * The outcome was written, but the receipt hook could not sign it (a signer outage): the row has no `receipt_ref`,
 * and later calls see the outcome as after any write. The original also records first and signs after.
 */
export class LedgerReceiptUnsignedError extends LedgerError {
  override readonly name = "LedgerReceiptUnsignedError"
  override readonly code = "receipt_unsigned"
  readonly requestId: string
  constructor(requestId: string, cause: unknown) {
    super(
      `Request '${clip(requestId)}' is recorded but its receipt was not signed: ` +
        `${cause instanceof Error ? cause.message : String(cause)}. Restore the signer; emit() one from the row.`,
      { cause },
    )
    this.requestId = requestId
  }
}
