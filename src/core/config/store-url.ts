// A store's address, checked where it is read (mycelium.yaml, a flag, a variable): each driver's own parse failed
// only at the first call, as a bare TypeError ("Invalid URL") or URIError, and Upstash's fetch of another scheme as
// an outage. Each check replays what its driver does with the text, so what the driver reads still passes.

/** The stores addressed by a URL (`url` for redis and upstash, `dsn` for postgres and neon). */
export type UrlStoreKind = "redis" | "upstash" | "postgres" | "neon"

// No message quotes the address: it may carry a password.
const NOT_A_URL =
  "is not a valid URL: check the host and the port (digits, at most 65535), and percent-encode an " +
  "'@', ':', '/', '?', '#' or space in the user name or password"
const BAD_ESCAPE = "holds a '%' not followed by two hex digits: write a '%' as %25"

const parse = (text: string, base?: string): URL | undefined => {
  try {
    return new URL(text, base)
  } catch {
    return undefined
  }
}

/** Whether every decode runs: a driver decodes the user, password and path, and throws a bare URIError. */
const decodes = (...steps: (() => unknown)[]): boolean => {
  try {
    for (const step of steps) step()
    return true
  } catch {
    return false
  }
}

/**
 * Why `text` cannot address a store of `kind`, as a phrase after the key's name ("is not a valid URL: ..."), or
 * undefined when its driver reads it. Postgres and Neon DSNs are expected to have passed their scheme check.
 */
export function storeUrlProblem(kind: UrlStoreKind, text: string): string | undefined {
  if (kind === "redis") return redisProblem(text)
  if (kind === "upstash") {
    const url = parse(text)
    if (url === undefined) return /^https?:\/\//i.test(text) ? NOT_A_URL : upstashScheme
    return url.protocol === "https:" || url.protocol === "http:" ? undefined : upstashScheme
  }
  // Both drivers split a socket path on a space, and parse nothing else.
  if (text.startsWith("/")) return undefined
  return kind === "neon" ? neonProblem(text) : postgresProblem(text)
}

const upstashScheme = "must be an https:// URL (the database's REST URL, e.g. https://<name>.upstash.io)"

function redisProblem(text: string): string | undefined {
  if (!/^rediss?:\/\//i.test(text)) return "must start with redis:// or rediss://"
  const url = parse(text)
  if (url === undefined) return NOT_A_URL
  // The connection decodes both before AUTH, where a URIError read as an outage.
  const ok = decodes(
    () => decodeURIComponent(url.username),
    () => decodeURIComponent(url.password),
  )
  return ok ? undefined : BAD_ESCAPE
}

/** What node-postgres and Neon do first: a space or a stray '%' is escaped rather than refused. */
function escaped(text: string): string | undefined {
  if (!/ |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text)) return text
  try {
    return encodeURI(text).replace(/%25(\d\d)/g, "%$1")
  } catch {
    return undefined
  }
}

// pg-connection-string: a URL, or one without a host (`postgres://u@/db?host=/run/postgresql`).
function postgresProblem(text: string): string | undefined {
  const s = escaped(text)
  if (s === undefined) return NOT_A_URL
  const url = parse(s, "postgres://base") ?? parse(s.replace("@/", "@___DUMMY___/"), "postgres://base")
  if (url === undefined) return NOT_A_URL
  const ok = decodes(
    () => decodeURIComponent(url.username),
    () => decodeURIComponent(url.password),
    () => decodeURIComponent(url.hostname),
    () => decodeURI(url.pathname),
  )
  return ok ? undefined : BAD_ESCAPE
}

// Neon's driver reads the text after the scheme as an http: URL, which needs a host, and decodes the path twice.
function neonProblem(text: string): string | undefined {
  const s = escaped(text)
  const scheme = s === undefined ? undefined : parse(s)?.protocol
  const url = s === undefined || scheme === undefined ? undefined : parse(`http:${s.slice(scheme.length)}`)
  if (url === undefined) return NOT_A_URL
  const ok = decodes(
    () => decodeURIComponent(url.username),
    () => decodeURIComponent(url.password),
    () => decodeURI(decodeURIComponent(url.pathname)),
  )
  return ok ? undefined : BAD_ESCAPE
}
