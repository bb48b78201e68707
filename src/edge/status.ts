// The one table from an error code to the HTTP status the API answers with. Every error the app returns is a
// MyceliumError with a snake_case code; codes not listed are ledger state conflicts (409).
import type { ContentfulStatusCode } from "hono/utils/http-status"
import { MyceliumError } from "../core/errors.ts"

export const HTTP_STATUS_BY_CODE: Readonly<Record<string, ContentfulStatusCode>> = {
  invalid_json: 400,
  invalid_body: 400,
  invalid_query: 400,
  invalid_option: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  ledger_unknown_request: 404,
  payload_too_large: 413,
  ledger_storage_unavailable: 503,
}

/** Status, code and message for any thrown value: a package error by its code, anything else a 500 without detail. */
export function errorResponse(err: unknown): {
  status: ContentfulStatusCode
  body: { error: { code: string; message: string } }
} {
  if (err instanceof MyceliumError) {
    const status = HTTP_STATUS_BY_CODE[err.code] ?? 409
    return { status, body: { error: { code: err.code, message: err.message } } }
  }
  return { status: 500, body: { error: { code: "internal_error", message: "internal error" } } }
}
