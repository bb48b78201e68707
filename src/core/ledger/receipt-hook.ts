// Where the ledgers meet audit receipts, without importing them (receipts build on the ledger, not the reverse).
// The order is: sign the receipt, write the row carrying its id (the completion write itself), append the receipt.
// A receipt is never stored for an outcome whose write lost its compare-and-set (a stale worker cannot leave
// evidence of a completion that did not happen). If the append fails after the row was written, the row names a
// receipt the store lacks: every record field is derived from the row (timestamp = finished_at), so the gap is
// visible to an audit and the same receipt can be re-signed from the row.
import type { JsonValue } from "./canonical.ts"
import type { LedgerEntry } from "./entry.ts"
import { LedgerError } from "./errors.ts"

export interface ReceiptDraft {
  readonly action: string
  readonly actionKind: "tool" | "task"
  readonly requestId: string
  readonly args?: readonly unknown[]
  readonly kwargs?: Readonly<Record<string, unknown>>
  readonly outputs?: unknown
  readonly status: "completed" | "failed"
  readonly error?: string | null
  /** Epoch seconds; default the emitter's clock. The ledgers pass the row's finished_at. */
  readonly timestamp?: number
}

export interface SignedReceipt {
  readonly receipt_id: string
}

/** What a ledger needs of a receipt emitter (`ReceiptEmitter` is one). */
export interface ReceiptHook {
  sign(draft: ReceiptDraft): Promise<SignedReceipt>
  append(record: SignedReceipt): Promise<unknown>
}

/** The outcome was written (its row names the receipt) but the receipt could not be stored. */
export class ReceiptAppendError extends LedgerError {
  override readonly name = "ReceiptAppendError"
  override readonly code = "receipt_append_failed"
  readonly receiptId: string
  readonly requestId: string
  constructor(requestId: string, receiptId: string, cause: unknown) {
    super(
      `Request '${requestId}' is recorded (receipt_ref ${receiptId}) but its receipt could not be stored: ` +
        `${cause instanceof Error ? cause.message : String(cause)}. A retry replays the stored result without ` +
        "running again; restore the receipt store and re-sign the receipt from the row.",
      { cause },
    )
    this.receiptId = receiptId
    this.requestId = requestId
  }
}

/** The receipt for a tool row's outcome, and the row carrying its id. */
export async function sealToolRow(
  hook: ReceiptHook | null,
  next: LedgerEntry,
  outputs: JsonValue,
): Promise<{ row: LedgerEntry; receipt: SignedReceipt | null }> {
  if (!hook) return { row: next, receipt: null }
  const receipt = await hook.sign({
    action: next.tool,
    actionKind: "tool",
    requestId: next.requestId,
    args: next.args,
    kwargs: next.kwargs,
    outputs,
    status: next.status === "completed" ? "completed" : "failed",
    error: next.error,
    ...(next.finishedAt !== null ? { timestamp: next.finishedAt } : {}),
  })
  return { row: { ...next, receiptRef: receipt.receipt_id }, receipt }
}

export async function appendReceipt(
  hook: ReceiptHook | null,
  receipt: SignedReceipt | null,
  requestId: string,
): Promise<void> {
  if (!hook || !receipt) return
  try {
    await hook.append(receipt)
  } catch (e) {
    throw new ReceiptAppendError(requestId, receipt.receipt_id, e)
  }
}
