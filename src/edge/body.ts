// Request bodies under limits: the size is refused before the body is read, the depth before anything parses it
// recursively (validation, the store).
import { parseExactJson } from "../core/exact-json.ts"
import { jsonDepth } from "../core/storage/limits.ts"
import { readLimited } from "../core/storage/read-limited.ts"
import { HttpError } from "./errors.ts"
import { unstorableAt } from "./storable.ts"

export interface BodyLimits {
  /** Largest request body in bytes. Default 1 MiB. */
  readonly maxBodyBytes: number
  /** Deepest JSON nesting accepted in a body. Default 128. */
  readonly maxDepth: number
}

export const DEFAULT_BODY_LIMITS: BodyLimits = Object.freeze({ maxBodyBytes: 1024 * 1024, maxDepth: 128 })

const tooLarge = (max: number) =>
  new HttpError(
    "payload_too_large",
    `request body over ${max} bytes; send less (e.g. an id, not the document)`,
  )

/** Longest id the routes that name a call accept (`/v1/calls/{id}/…`, `/v1/transitions/{id}`). */
export const MAX_ID = 512

/** Reads at most `max` bytes: Content-Length is checked first, then the stream is counted as it arrives. */
export async function readBodyText(req: Request, max: number): Promise<string> {
  const bytes = await readLimited(req, max)
  if (bytes === null) throw tooLarge(max)
  try {
    return decoder.decode(bytes)
  } catch {
    throw new HttpError("invalid_json", "request body is not valid UTF-8")
  }
}

// Fatal: a lenient decoder turns any invalid bytes into U+FFFD, so two different ids would name one row.
const decoder = /* @__PURE__ */ new TextDecoder("utf-8", { fatal: true })

// Where JSON.parse may round a number the key needs (an integer beyond 2^53, an exponent, -0); also in strings,
// which costs only the exact parse.
const INEXACT = /\d{16}|\d[eE]|-0(?![.\deE])/

/**
 * A JSON body: application/json, within the size and depth limits. `exactArgs`: its `args` read exactly, as
 * `parseToolArguments` reads them, so the server keys a call as `ledger.tool()` does (docs/keys.md).
 */
export async function readJsonBody(req: Request, limits: BodyLimits, exactArgs = false): Promise<unknown> {
  const type = req.headers.get("content-type") ?? ""
  // Only JSON: a browser page cannot send it cross-origin without a CORS preflight.
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError("unsupported_media_type", "send the body as 'Content-Type: application/json'")
  const text = await readBodyText(req, limits.maxBodyBytes)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new HttpError("invalid_json", "request body must be valid JSON")
  }
  if (jsonDepth(value, limits.maxDepth) > limits.maxDepth)
    throw new HttpError("too_deep", `request body nests deeper than ${limits.maxDepth} levels`)
  const bad = unstorableAt(value, "")
  if (bad) throw new HttpError("invalid_body", bad)
  if (exactArgs && typeof value === "object" && value !== null && INEXACT.test(text))
    (value as { args?: unknown }).args = (parseExactJson(text, "beyond-2^53") as { args?: unknown }).args
  return value
}
