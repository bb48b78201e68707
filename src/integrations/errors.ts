import { MyceliumError } from "../core/errors.ts"
import { LedgerStorageUnavailableError } from "../core/ledger/errors.ts"

/** Misuse of an integration (e.g. asking for the transition of a call that is not guarded). */
export class GuardedToolError extends MyceliumError {
  override readonly name = "GuardedToolError"
  override readonly code: string

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
  }
}

/**
 * A framework that shows the model a thrown error's message would show it the store driver's text (file paths,
 * hosts): a ledger outage is rethrown with a fixed message, the driver's error kept as its `cause` for operators.
 */
export function hideOutage(e: unknown): never {
  throw (e as { code?: unknown } | null)?.code === "ledger_storage_unavailable"
    ? new LedgerStorageUnavailableError(
        "Ledger storage unavailable: the call may have taken effect. Do not call it again now.",
        { cause: e },
      )
    : e
}
