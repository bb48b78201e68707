// What a ledger needs of audit receipts, as types only: receipts build on the ledger (src/core/receipts), never
// the reverse, so the ledger sees an emitter through this contract.

/** The facts a receipt records about one outcome; the emitter adds id, agent, hashes and the signature. */
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
