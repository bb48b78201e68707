// Hook for audit receipts (issue #9). The receipts API is not part of this build of the package, so the panel
// says so instead of showing made-up data; when it lands, render the receipt chain for `rows` here.
import type { ActionLedger, LedgerEntry } from "../../src/index.ts"

export async function receiptsView(_ledger: ActionLedger, rows: readonly LedgerEntry[]): Promise<string> {
  const referenced = rows.filter((r) => r.receiptRef !== null).length
  return `The receipts API is not in this build; ${referenced} of ${rows.length} rows reference a receipt.`
}
