// Request bodies under limits: the size is refused before the body is read, the depth before anything parses it
// recursively (validation, the store).
import { jsonDepth } from "../core/storage/limits.ts"
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
  const declared = req.headers.get("content-length")
  if (declared !== null && (!/^\d{1,16}$/.test(declared) || Number(declared) > max)) throw tooLarge(max)
  if (!req.body) return ""
  const reader = req.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => undefined)
      throw tooLarge(max)
    }
    chunks.push(value)
  }
  const all = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.byteLength
  }
  return new TextDecoder().decode(all)
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
  return value
}
