import { LedgerError } from "../ledger/index.ts"

/** A receipt could not be built, signed or stored. The message says which input is missing or wrong. */
export class AuditReceiptError extends LedgerError {
  override readonly name: string = "AuditReceiptError"
  override readonly code: string = "audit_receipt_error"
}

/** The receipt store holds something that is not a receipt. Nothing was appended; repair or restore the store. */
export class ReceiptStoreCorruptError extends AuditReceiptError {
  override readonly name = "ReceiptStoreCorruptError"
  override readonly code = "receipt_store_corrupt"
}
