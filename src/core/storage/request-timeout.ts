// How long the HTTP clients (RemoteLedger, HttpLedgerStorage) wait for one answer of the ledger API. A server that
// accepts the connection and never answers, or trickles its body, would otherwise hold the agent's call forever:
// a hung server is an outage, and an outage fails closed with a typed error.
import { InvalidOptionError } from "../errors.ts"
import { secondsProblem } from "../seconds.ts"
import { MAX_ERROR_TEXT, storableText } from "./text.ts"

/** Seconds a client waits for a whole answer (headers and body) unless told otherwise. */
export const DEFAULT_REQUEST_TIMEOUT = 30
/**
 * The longest limit taken: timers hold 32-bit milliseconds (about 24.8 days), and a longer one fires at once, so
 * every request would fail. A day is more than any answer needs; `null` is the way to wait without a limit.
 */
export const MAX_REQUEST_TIMEOUT = 86_400

/**
 * The checked `requestTimeout` option (or a store's `timeout`: `name`): seconds above 0 up to a day, or null for no
 * limit.
 */
export function requestTimeoutOption(
  value: number | null | undefined,
  name = "requestTimeout",
): number | null {
  if (value === undefined) return DEFAULT_REQUEST_TIMEOUT
  if (value === null) return null
  const problem =
    secondsProblem(name, value) ??
    (value > 0 && value <= MAX_REQUEST_TIMEOUT ? null : `${name} must be > 0 and <= ${MAX_REQUEST_TIMEOUT}`)
  if (problem) throw new InvalidOptionError(`${problem}. Pass e.g. { ${name}: 30 }, or null for no limit.`)
  return value
}

/** The signal for one request, covering its body read too; none without a limit. */
export function requestSignal(seconds: number): AbortSignal
export function requestSignal(seconds: number | null): AbortSignal | undefined
export function requestSignal(seconds: number | null): AbortSignal | undefined {
  return seconds === null ? undefined : AbortSignal.timeout(Math.max(1, Math.ceil(seconds * 1000)))
}

/**
 * The Authorization header for one request, its token under the request's own deadline: an identity provider that
 * hangs is an outage like a hung server. A throw is the caller's to type, as its fetch's.
 */
export async function bearer(
  token: string | (() => string | Promise<string>) | undefined,
  signal: AbortSignal | undefined,
): Promise<string | undefined> {
  const t =
    typeof token === "function"
      ? await Promise.race([
          // Awaited, not handed back from then(): an async token function that throws before its first await gives
          // a promise already rejected, which workerd reports as uncaught when a then() callback returns it.
          (async () => await token())(),
          new Promise<never>((_, reject) =>
            signal?.addEventListener("abort", () =>
              reject(new Error("token function: no token within requestTimeout")),
            ),
          ),
        ])
      : token
  // Sent as "Bearer 42", "[object Object]" or no header at all, a broken identity provider's answer reads as the
  // server's 401 (or, to a server without auth, as no problem).
  if (typeof token === "function" && (typeof t !== "string" || !t))
    throw new Error("token function: no token (it must return a non-empty string)")
  // fetch refuses a header value holding CR, LF or NUL (other than trailing whitespace) with a message that quotes
  // it whole: the token went into the error, and from there into logs and a model's context.
  if (t && /[\0\r\n]/.test(String(t).replace(/[\t\n\r ]+$/, "")))
    throw new Error("token: it holds a line break or NUL, which no HTTP header can carry")
  return t ? `Bearer ${t}` : undefined
}

/**
 * A server's error text as the clients pass it on (to logs, and through a tool's error to a model): a hostile or
 * broken server's 60 MB message, terminal escapes or unpaired surrogates went on verbatim. Cut as a recorded
 * failure's text is, control characters but tab and line feed replaced.
 */
export const serverText = (s: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: replacing control characters is the point
  storableText(s, MAX_ERROR_TEXT).replace(/[\u0001-\u0008\u000b-\u001f\u007f-\u009f]/g, "\ufffd")

/** A server's error code when it is one (snake_case, as every code of the API), else `http_error`. */
export const serverCode = (code: unknown): string =>
  typeof code === "string" && /^[a-z][a-z\d_]{0,63}$/.test(code) ? code : "http_error"

/** Why a request failed, saying which limit cut it off when it was the timeout. */
export function requestFailure(e: unknown, seconds: number | null): string {
  if ((e as { name?: unknown } | null)?.name === "TimeoutError")
    return `no whole answer within ${seconds} s (requestTimeout)`
  return e instanceof Error ? e.message : String(e)
}

/**
 * A redirect the request did not follow (`redirect: "manual"`; browsers answer an opaque one): followed, a 303
 * turns a POST or PUT into a GET and a 307 sends the body to another origin.
 */
export const isRedirect = (res: Response): boolean =>
  res.type === "opaqueredirect" || (res.status > 299 && res.status < 400)
