// Bearer-token auth for the ledger API: a JWT verified with jose, carrying a tenant and scopes.
import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  errors as joseErrors,
  jwtVerify,
} from "jose"
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"
import { secondsProblem } from "../core/seconds.ts"
import { isUnstorableText, storableText } from "../core/storage/text.ts"

/**
 * What a request may do (token scope `ledger:<name>`). `agent` runs ledgered calls (server-side state machine),
 * `reader` lists and shows, `operator` releases and marks workers dead, `store` uses the raw storage routes
 * (trusted backends only: it can write any row).
 */
export type LedgerScope = "agent" | "reader" | "operator" | "store"

export interface Principal {
  readonly tenant: string
  readonly subject: string
  readonly scopes: ReadonlySet<LedgerScope>
}

export interface JwtAuthOptions {
  /** HS256 shared secret (at least 32 bytes, RFC 7518 §3.2), a JWKS URL, or a jose key resolver. */
  readonly secret?: string | Uint8Array
  readonly jwksUrl?: string
  readonly key?: JWTVerifyGetKey
  readonly issuer?: string
  readonly audience?: string
  /** Claim holding the tenant. Default `tenant`. */
  readonly tenantClaim?: string
  /** Refuse tokens issued longer ago than this many seconds (needs `iat`). Default: no maximum. */
  readonly maxTokenAge?: number
  /** Seconds of clock skew tolerated for `exp`, `nbf` and `iat`. Default 30. */
  readonly clockTolerance?: number
}

export type AuthErrorCode = "unauthorized" | "forbidden" | "auth_unavailable"

/**
 * A refused or unverifiable token: `unauthorized` (401), `forbidden` (403, scope or tenant), `auth_unavailable`
 * (503: the key set could not be fetched; retry later). The status comes from src/edge/status.ts.
 */
export class AuthError extends MyceliumError {
  override readonly name = "AuthError"
  override readonly code: AuthErrorCode
  constructor(code: AuthErrorCode, message: string) {
    super(message)
    this.code = code
  }
}

const SCOPES: readonly LedgerScope[] = ["agent", "reader", "operator", "store"]

function scopesOf(payload: JWTPayload): Set<LedgerScope> {
  const raw = payload.scope ?? payload.scopes
  // RFC 6749 §3.3 separates scopes by U+0020 only: "a\u00a0ledger:store" is one scope, and grants nothing here.
  const list: unknown[] = typeof raw === "string" ? raw.split(" ") : Array.isArray(raw) ? raw : []
  const out = new Set<LedgerScope>()
  // Only the `ledger:` form: a token another service's IdP minted with a bare `store` or `operator` scope (no
  // audience set) must not write rows or release calls here.
  for (const s of list) {
    const name = typeof s === "string" && s.startsWith("ledger:") ? s.slice(7) : ""
    if ((SCOPES as readonly string[]).includes(name)) out.add(name as LedgerScope)
  }
  // Operators may read what they release.
  if (out.has("operator")) out.add("reader")
  return out
}

/** The key source could not answer (network, timeout, a non-JWKS response): not the token's fault. */
function isKeySourceFailure(e: unknown): boolean {
  if (e instanceof joseErrors.JWKSTimeout || e instanceof joseErrors.JWKSInvalid) return true
  // fetch failures surface as plain errors (TypeError), never as a JOSEError. jose throws its generic JOSEError
  // (every token fault has a subclass) only for a key set answer that is not 200 or not JSON.
  return !(e instanceof joseErrors.JOSEError) || e.code === "ERR_JOSE_GENERIC"
}

const HMAC_ALGS = ["HS256", "HS384", "HS512"]
const PUBLIC_KEY_ALGS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
]

/**
 * The header is checked before jose sees the token: jose refuses `alg: none`, unknown algs and `crit` in a promise
 * that is rejected before its caller's handler is attached, which workerd reports as an unhandled rejection (one
 * log error per hostile request). Refused here, synchronously, they never reach it.
 */
function checkHeader(token: string, algs: readonly string[]): void {
  let header: ReturnType<typeof decodeProtectedHeader>
  try {
    header = decodeProtectedHeader(token)
  } catch {
    throw new AuthError("unauthorized", "invalid token: its header is not a JWS header")
  }
  if (typeof header.alg !== "string" || !algs.includes(header.alg))
    throw new AuthError("unauthorized", `invalid token: its 'alg' is not one of ${algs.join(", ")}`)
  if (header.crit !== undefined || header.b64 !== undefined)
    throw new AuthError("unauthorized", "invalid token: 'crit' and 'b64' headers are not accepted")
}

// A relative or non-http URL failed as a bare TypeError ("Invalid URL string."), or later as a fetch that never works.
function jwksUrlOf(raw: string): URL {
  let url: URL | null = null
  try {
    url = new URL(raw)
  } catch {}
  if (url?.protocol === "https:" || url?.protocol === "http:") return url
  throw new InvalidOptionError(
    "jwksUrl must be the absolute http(s) URL of a key set (https://issuer.example/.well-known/jwks.json): correct it",
  )
}

/**
 * A key resolver (a JWKS URL's, or one passed as `key`, e.g. jose's createRemoteJWKSet) that cannot answer is an
 * outage, 503: told apart here, where its own errors surface, so that no other error (a token's) is taken for one.
 */
const keySource =
  (get: JWTVerifyGetKey): JWTVerifyGetKey =>
  async (...a) => {
    try {
      return await get(...a)
    } catch (e) {
      if (isKeySourceFailure(e))
        throw new AuthError("auth_unavailable", "the token's key set could not be fetched; retry shortly")
      throw e
    }
  }

// Checked when built: NaN (Number() of an unset env var) or a negative tolerance, and a token age that is not > 0,
// refused every token as jose's TypeError, blamed on the token.
function seconds(name: "clockTolerance" | "maxTokenAge", v: unknown, fallback: number): void {
  const problem =
    name === "clockTolerance"
      ? secondsProblem(name, v, 0)
      : (secondsProblem(name, v) ?? ((v as number) > 0 ? null : `${name} must be > 0, got ${v}`))
  if (problem) throw new InvalidOptionError(`${problem}: pass e.g. { ${name}: ${fallback} }, or omit it`)
}

/** Builds a verifier: `Authorization: Bearer <jwt>` → Principal, or an AuthError. */
export function jwtAuth(options: JwtAuthOptions): (authorization: string | undefined) => Promise<Principal> {
  const tenantClaim = options.tenantClaim ?? "tenant"
  const tolerance = options.clockTolerance ?? 30
  seconds("clockTolerance", tolerance, 30)
  if (options.maxTokenAge !== undefined) seconds("maxTokenAge", options.maxTokenAge, 3600)
  let key: Uint8Array | JWTVerifyGetKey
  // A shared secret verifies HMAC only, a key set public-key algs only: no HS/RS confusion whatever jose allows.
  let algs = [...HMAC_ALGS, ...PUBLIC_KEY_ALGS]
  // A CryptoKey passed from JavaScript (the type says resolver) is no source that can fail: used as it is.
  if (options.key) key = typeof options.key === "function" ? keySource(options.key) : options.key
  else if (options.jwksUrl) {
    key = keySource(createRemoteJWKSet(jwksUrlOf(options.jwksUrl)))
    algs = PUBLIC_KEY_ALGS
  } else if (options.secret !== undefined) {
    // UTF-8 writes an unpaired surrogate as U+FFFD: such a secret would be another secret's key.
    if (typeof options.secret === "string" && !options.secret.isWellFormed())
      throw new InvalidOptionError(
        "jwtAuth secret holds an unpaired surrogate, which UTF-8 cannot encode: use a random one in valid Unicode",
      )
    key = typeof options.secret === "string" ? new TextEncoder().encode(options.secret) : options.secret
    // RFC 7518 §3.2: an HS256 key has at least 256 bits; a short one can be guessed offline from any one token.
    if (key.length < 32)
      throw new InvalidOptionError(
        "jwtAuth secret must be at least 32 bytes (256 bits, RFC 7518): use a random one, e.g. `openssl rand -base64 32`",
      )
    algs = HMAC_ALGS
  } else throw new InvalidOptionError("jwtAuth needs secret, jwksUrl or key: pass one of them")
  const verifyOptions: JWTVerifyOptions = {
    algorithms: algs,
    requiredClaims: ["exp"],
    clockTolerance: tolerance,
    ...(options.issuer ? { issuer: options.issuer } : {}),
    ...(options.audience ? { audience: options.audience } : {}),
    ...(options.maxTokenAge !== undefined ? { maxTokenAge: options.maxTokenAge } : {}),
  }

  return async (authorization) => {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")
    if (!m?.[1])
      throw new AuthError("unauthorized", "missing bearer token: send 'Authorization: Bearer <jwt>'")
    if (m[1].length > 8192)
      throw new AuthError(
        "unauthorized",
        "bearer token over 8192 characters: send a shorter one (fewer claims)",
      )
    checkHeader(m[1], algs)
    let payload: JWTPayload
    try {
      payload =
        key instanceof Uint8Array
          ? (await jwtVerify(m[1], key, verifyOptions)).payload
          : (await jwtVerify(m[1], key, verifyOptions)).payload
    } catch (e) {
      if (e instanceof AuthError) throw e
      throw new AuthError("unauthorized", `invalid token: ${e instanceof Error ? e.message : String(e)}`)
    }
    // jose checks `iat` only with maxTokenAge; a token "issued" in the future is forged or from a broken clock.
    if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + tolerance)
      throw new AuthError("unauthorized", "invalid token: 'iat' is in the future; check the issuer's clock")
    const tenant = payload[tenantClaim]
    // Not `.` or `..` either: path steps, so a factory keeping each tenant's store under `join(dir, tenant)` gave
    // `..` the directory above every tenant's (call ids refuse them for the same reason).
    if (typeof tenant !== "string" || !/^(?!\.\.?$)[A-Za-z0-9_.-]{1,128}$/.test(tenant)) {
      throw new AuthError("forbidden", `token has no valid '${tenantClaim}' claim`)
    }
    // An operator's `sub` is a release's `by` when the body names none: text a body `by` could not be (NUL, an
    // unpaired surrogate) is refused here, not written (Postgres refused it as if the store were down).
    const subject = String(payload.sub ?? "unknown")
    if (isUnstorableText(subject))
      throw new AuthError(
        "unauthorized",
        "invalid token: its 'sub' holds U+0000 or an unpaired surrogate; have the issuer send valid Unicode",
      )
    return { tenant, subject: storableText(subject, 128), scopes: scopesOf(payload) }
  }
}
