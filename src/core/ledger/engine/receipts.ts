// Where the ledger meets audit receipts. The order is: sign the receipt, write the row carrying its id (the outcome
// write itself, no extra round trip), append the receipt. A receipt is never stored for an outcome whose write lost
// its compare-and-set (a stale worker cannot leave evidence of a completion that did not happen). If the append
// fails after the row was written, the row names a receipt the store lacks: every record field is derived from the
// row (timestamp = finished_at), so the gap is visible to an audit and a new receipt can be emitted from the row.
// A tool outcome whose signing fails is written without a receipt (fenced.ts), as the task ledger's is.
import type { LedgerCore } from "../core.ts"
import { ReceiptAppendError } from "../errors.ts"
import { receiptRefRow } from "../machine/transitions.ts"
import type { LedgerEntry } from "../model/entry.ts"
import type { ReceiptDraft, ReceiptHook, SignedReceipt } from "../model/receipt-hook.ts"

/** The receipt for `draft` and `next` carrying its id; `next` unchanged when receipts are off. */
export async function sealRow(
  core: LedgerCore,
  next: LedgerEntry,
  draft: (row: LedgerEntry) => ReceiptDraft,
): Promise<{ row: LedgerEntry; receipt: SignedReceipt | null }> {
  if (!core.receipts) return { row: next, receipt: null }
  const receipt = await core.receipts.sign(draft(next))
  return { row: receiptRefRow(next, receipt.receipt_id), receipt }
}

/**
 * Stores a receipt whose row was written; a failure says the outcome stands but its receipt is missing. The task
 * ledger (src/core/tasks) appends its receipts through this too.
 */
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
