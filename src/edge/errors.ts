// One mapping from stable error codes to HTTP statuses, for every route and every runtime the app runs on.

/** An API refusal with a stable snake_case code; its status comes from `statusForCode`. */
export class HttpError extends Error {
  override readonly name = "HttpError"
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
  get status(): number {
    return statusForCode(this.code)
  }
}

export type HttpStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 500 | 503

const STATUS: Readonly<Record<string, HttpStatus>> = {
  invalid_json: 400,
  invalid_body: 400,
  invalid_query: 400,
  invalid_path: 400,
  too_deep: 400,
  invalid_binding: 400,
  missing_request_identity: 400,
  tool_capability_declaration: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  ledger_unknown_request: 404,
  payload_too_large: 413,
  row_too_large: 413,
  unsupported_media_type: 415,
  internal_error: 500,
  ledger_storage_unavailable: 503,
  auth_unavailable: 503,
  misconfigured: 503,
}

/**
 * The status for an error code. Ledger refusals (`ledger_*`, `args_drift`) are conflicts with the stored state:
 * 409. Anything unmapped is our bug: 500.
 */
export function statusForCode(code: string): HttpStatus {
  const s = STATUS[code]
  if (s !== undefined) return s
  if (code.startsWith("ledger_") || code === "args_drift") return 409
  return 500
}

/** The body of every error response. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

export function errorResponse(code: string, message: string): Response {
  const body: ErrorBody = { error: { code, message } }
  return Response.json(body, { status: statusForCode(code) })
}
