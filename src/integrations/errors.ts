// MyceliumError is being introduced on another branch; until it lands, integration errors extend LedgerError,
// the nearest existing root, so `instanceof LedgerError` and the snake_case `code` contract hold either way.
import { LedgerError } from "../core/ledger/index.ts"

/** Misuse of an integration (e.g. asking for the transition of a call that is not guarded). */
export class GuardedToolError extends LedgerError {
  override readonly name = "GuardedToolError"
  override readonly code: string

  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}
