// The package's one error root. Every error it throws extends `MyceliumError`, so callers can catch the package's
// errors in one place and branch on a stable snake_case `code` (HTTP maps it to a status, logs search for it).

/** Root of every error this package throws: a stable `name`, a snake_case `code`, a message that says what to do. */
export class MyceliumError extends Error {
  override readonly name: string = "MyceliumError"
  readonly code: string = "mycelium_error"
}

/** An option or argument the caller passed is out of range or of the wrong kind. Nothing was done. */
export class InvalidOptionError extends MyceliumError {
  override readonly name: string = "InvalidOptionError"
  override readonly code: string = "invalid_option"
}
