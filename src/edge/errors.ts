// The edge API's own refusal. Its HTTP status comes from the one code table, src/edge/status.ts.
import { MyceliumError } from "../core/errors.ts"
import { type HttpStatus, statusForCode } from "./status.ts"

/** A bad request with a stable snake_case code (`invalid_body`, `not_found`, `payload_too_large`, ...). */
export class HttpError extends MyceliumError {
  override readonly name = "HttpError"
  override readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
  get status(): HttpStatus {
    return statusForCode(this.code)
  }
}
