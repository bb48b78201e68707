// Request bodies under limits: the size is refused before the body is read, the depth before anything parses it
// recursively (validation, the store).
import { jsonDepth } from "../core/storage/limits.ts"
import { readLimited } from "../core/storage/read-limited.ts"
import { HttpError } from "./errors.ts"

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

// NUL and unpaired surrogates: valid JSON escapes, but not text every store can hold (Postgres refuses both, and a
// refused write would answer 503 as if the store were down). Refused for every store, so the API is the same on all.
const UNPAIRED = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `s` holds text no store can be trusted with. */
export function isUnstorableText(s: string): boolean {
  return s.includes("\u0000") || UNPAIRED.test(s)
}

const BAD_TEXT = "text holds U+0000 or an unpaired surrogate; send valid Unicode"

/** The first string or key of `value` (already depth-checked) that no store keeps as sent: where, and why. */
function unstorableAt(value: unknown, path: string): string | null {
  if (typeof value === "string") return isUnstorableText(value) ? `${path || "body"}: ${BAD_TEXT}` : null
  if (typeof value !== "object" || value === null) return null
  for (const [k, v] of Object.entries(value)) {
    const here = path ? `${path}.${k}` : k
    if (isUnstorableText(k)) return `${path || "body"}: a key ${BAD_TEXT}`
    // Rebuilding an object (validation, spreads) drops a `__proto__` key: args {"__proto__": x} would be args {}.
    if (k === "__proto__") return `${path || "body"}: a "__proto__" key cannot be stored; rename it`
    const bad = unstorableAt(v, here)
    if (bad) return bad
  }
  return null
}

/** A JSON body: application/json, within the size and depth limits. */
export async function readJsonBody(req: Request, limits: BodyLimits): Promise<unknown> {
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
  return value
}
