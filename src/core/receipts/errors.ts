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

/**
 * Other writers (other processes, other store instances) moved the chain's tail under every attempt of an append:
 * nothing was appended and nothing is damaged. Retry; if it persists, fewer writers should share one chain.
 */
export class ReceiptStoreContendedError extends AuditReceiptError {
  override readonly name = "ReceiptStoreContendedError"
  override readonly code = "receipt_store_contended"
  constructor(receiptId: string, ledger: string, attempts: number) {
    super(
      `could not append receipt ${receiptId}: other writers moved chain '${ledger}' under ${attempts} attempts ` +
        "(contention, not damage); retry the append",
    )
  }
}

/**
 * Appends to one chain, one at a time in this store instance: writers in one process never race for its tail,
 * which would spend the attempts meant for other processes. One settled promise is kept per chain name.
 */
export function chainQueue(): <T>(ledger: string, append: () => Promise<T>) => Promise<T> {
  const chains = new Map<string, Promise<unknown>>()
  return (ledger, append) => {
    const prev = chains.get(ledger)
    // Awaited, not handed back from then(): an append that throws before its first await (a binding that is no
    // Durable Object namespace) gives a promise already rejected, which workerd reports as uncaught.
    const run = (async () => {
      await prev
      return await append()
    })()
    chains.set(
      ledger,
      run.catch(() => {}),
    )
    return run
  }
}
