// The one table from an error code to the HTTP status the API answers with, for every route and every runtime the
// app runs on. Every error the app returns is a MyceliumError with a snake_case code; `invalid_*` codes not listed
// are 400, other package codes are ledger state conflicts (409). Anything else is our bug: a 500 without detail.
import { MyceliumError } from "../core/errors.ts"
import { LedgerReceiptUnsignedError, ReceiptAppendError } from "../core/ledger/errors.ts"
import { STORE_FAULT_CODES } from "../core/storage/store-faults.ts"

export type HttpStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 500 | 503

export const HTTP_STATUS_BY_CODE: Readonly<Record<string, HttpStatus>> = {
  invalid_json: 400,
  invalid_body: 400,
  invalid_query: 400,
  invalid_path: 400,
  invalid_option: 400,
  invalid_binding: 400,
  too_deep: 400,
  missing_request_identity: 400,
  tool_capability_declaration: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  ledger_unknown_request: 404,
  receipts_not_configured: 404,
  payload_too_large: 413,
  row_too_large: 413,
  too_many_receipts: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  ledger_storage_unavailable: 503,
  ledger_error: 503,
  // The store is there but unusable until an operator acts: not the caller's conflict, and retrying may help.
  ledger_file_corrupt: 503,
  ledger_file_lock_timeout: 503,
  receipt_store_corrupt: 503,
  // Other writers kept moving the chain: nothing was appended, and a retry may go through.
  receipt_store_contended: 503,
  // A store's answer that is none of its own (a receipt log that is no list): an outage, not the caller's conflict.
  upstash_unexpected_reply: 503,
  auth_unavailable: 503,
  misconfigured: 503,
}

/** The status for a package error code. */
export function statusForCode(code: string): HttpStatus {
  const s = HTTP_STATUS_BY_CODE[code]
  if (s !== undefined) return s
  return code.startsWith("invalid_") ? 400 : 409
}

/** The body of every error response. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

/** Status and body for any thrown value: a package error by its code, anything else a 500 without detail. */
export function errorResponse(err: unknown): { status: HttpStatus; body: ErrorBody } {
  if (err instanceof MyceliumError) {
    const message =
      err.code === "ledger_storage_unavailable"
        ? "ledger storage unavailable; retry shortly"
        : STORE_FAULT_CODES.has(err.code)
          ? `ledger storage cannot be used (${err.code}); the server log says where, an operator must repair it`
          : err instanceof ReceiptAppendError || err instanceof LedgerReceiptUnsignedError
            ? // Its message quotes the receipt store driver's error (a host, a user, a DSN) or the signer's (a KMS).
              `request '${err.requestId}' is recorded but its receipt was not ${err instanceof ReceiptAppendError ? `stored (receipt_ref ${err.receiptId})` : "signed"}; the server log says why`
            : err.message || err.code
    return { status: statusForCode(err.code), body: { error: { code: err.code, message } } }
  }
  return { status: 500, body: { error: { code: "internal_error", message: "internal error" } } }
}
