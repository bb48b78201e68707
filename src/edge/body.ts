// Request bodies under limits: the size is refused before the body is read, the depth before anything parses it
// recursively (validation, the store).
import { hasDuplicateKey } from "../core/duplicate-keys.ts"
import { parseExactJson } from "../core/exact-json.ts"
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

/** The member of a body read exactly (integers beyond 2^53 as bigint): a call's arguments, a completion's result. */
export type ExactMember = "args" | "result"

export { MAX_ID } from "../core/storage/api-ids.ts"

/** Reads at most `max` bytes: Content-Length is checked first, then the stream is counted as it arrives. */
export async function readBodyText(req: Request, max: number): Promise<string> {
  // A client that drops the connection mid-body is its own failure (a 400), not the server's (a 500 and a stack).
  const bytes = await readLimited(req, max).catch(() => {
    throw new HttpError("invalid_body", "the request body ended before it was whole; send it again")
  })
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
// which costs only the exact parse. A result is stored as toJsonValue() makes it, a float a number and -0 as 0, so
// only a run of digits matters there (and a completion's base64url lease often holds a digit and an "e").
const INEXACT: Readonly<Record<ExactMember, RegExp>> = {
  args: /\d{16}|\d[eE]|-0(?![.\deE])/,
  result: /\d{16}/,
}

/** Whether the JSON text opens more than `max` arrays and objects inside one another (brackets in strings aside). */
export function nestsDeeper(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // a backslash: the next character is escaped
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}

/**
 * A JSON body: application/json, within the size and depth limits. `exact`: that member read exactly, as
 * `parseToolArguments` reads arguments: `args`, so the server keys a call as `ledger.tool()` does (docs/keys.md);
 * `result`, so an integer beyond 2^53 is stored as its digits, as `ledger.tool()` stores a bigint, not rounded.
 */
export async function readJsonBody(req: Request, limits: BodyLimits, exact?: ExactMember): Promise<unknown> {
  const type = req.headers.get("content-type") ?? ""
  // Only JSON: a browser page cannot send it cross-origin without a CORS preflight.
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError("unsupported_media_type", "send the body as 'Content-Type: application/json'")
  const text = await readBodyText(req, limits.maxBodyBytes)
  // Depth from the text, before JSON.parse: a 1 MiB `[[[…` took V8 a second or more to build, only to be refused.
  if (nestsDeeper(text, limits.maxDepth))
    throw new HttpError("too_deep", `request body nests deeper than ${limits.maxDepth} levels`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new HttpError("invalid_json", "request body must be valid JSON")
  }
  // JSON.parse keeps the last of a repeated member; a proxy or log that reads the first would see another call.
  if (hasDuplicateKey(text))
    throw new HttpError("invalid_body", "request body names a member twice: send each once")
  const bad = unstorableAt(value, "")
  if (bad) throw new HttpError("invalid_body", bad)
  if (
    exact &&
    typeof value === "object" &&
    value !== null &&
    Object.hasOwn(value, exact) &&
    INEXACT[exact].test(text)
  )
    (value as Record<string, unknown>)[exact] = (
      parseExactJson(text, "beyond-2^53") as Record<string, unknown>
    )[exact]
  return value
}
