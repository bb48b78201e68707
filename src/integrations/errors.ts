import { MyceliumError } from "../core/errors.ts"

/** Misuse of an integration (e.g. asking for the transition of a call that is not guarded). */
export class GuardedToolError extends MyceliumError {
  override readonly name = "GuardedToolError"
  override readonly code: string

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
  }
}
