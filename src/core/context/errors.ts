import { MyceliumError } from "../errors.ts"

/** Raised when a guard is configured with values it cannot honour (caught at wrap time, not per call). */
export class ContextGuardConfigError extends MyceliumError {
  override readonly name = "ContextGuardConfigError"
  override readonly code = "context_guard_config"
}
