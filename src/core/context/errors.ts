/** Raised when a guard is configured with values it cannot honour (caught at wrap time, not per call). */
export class ContextGuardConfigError extends Error {
  override readonly name = "ContextGuardConfigError"
  readonly code = "CONTEXT_GUARD_CONFIG"
}
