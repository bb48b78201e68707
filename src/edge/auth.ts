// Bearer-token auth for the ledger API: a JWT verified with jose, carrying a tenant and scopes.

import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from "jose"
import { InvalidOptionError, MyceliumError } from "../core/errors.ts"

/** What a request may do. `agent` drives the storage protocol, `reader` lists, `operator` releases. */
export type LedgerScope = "agent" | "reader" | "operator"

export interface Principal {
  readonly tenant: string
  readonly subject: string
  readonly scopes: ReadonlySet<LedgerScope>
}

export interface JwtAuthOptions {
  /** HS256 shared secret, a JWKS URL, or a jose key resolver. */
  readonly secret?: string | Uint8Array
  readonly jwksUrl?: string
  readonly key?: JWTVerifyGetKey
  readonly issuer?: string
  readonly audience?: string
  /** Claim holding the tenant. Default `tenant`. */
  readonly tenantClaim?: string
}

/** The caller is not authenticated (`unauthorized`, 401) or lacks the scope or tenant (`forbidden`, 403). */
export class AuthError extends MyceliumError {
  override readonly name = "AuthError"
  override readonly code: "unauthorized" | "forbidden"
  constructor(code: "unauthorized" | "forbidden", message: string) {
    super(message)
    this.code = code
  }
}

const SCOPES: readonly LedgerScope[] = ["agent", "reader", "operator"]

function scopesOf(payload: JWTPayload): Set<LedgerScope> {
  const raw = payload.scope ?? payload.scopes
  const list = typeof raw === "string" ? raw.split(/\s+/) : Array.isArray(raw) ? raw.map(String) : []
  const out = new Set<LedgerScope>()
  for (const s of list) {
    const name = s.startsWith("ledger:") ? s.slice(7) : s
    if ((SCOPES as readonly string[]).includes(name)) out.add(name as LedgerScope)
  }
  // Operators may read what they release.
  if (out.has("operator")) out.add("reader")
  return out
}

/** Builds a verifier: `Authorization: Bearer <jwt>` → Principal, or an AuthError. */
export function jwtAuth(options: JwtAuthOptions): (authorization: string | undefined) => Promise<Principal> {
  const tenantClaim = options.tenantClaim ?? "tenant"
  let key: Uint8Array | JWTVerifyGetKey
  if (options.key) key = options.key
  else if (options.jwksUrl) key = createRemoteJWKSet(new URL(options.jwksUrl))
  else if (options.secret !== undefined) {
    key = typeof options.secret === "string" ? new TextEncoder().encode(options.secret) : options.secret
  } else throw new InvalidOptionError("jwtAuth needs secret, jwksUrl or key: pass one of them")

  return async (authorization) => {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")
    if (!m?.[1]) throw new AuthError("unauthorized", "missing bearer token")
    let payload: JWTPayload
    try {
      const verifyOptions = {
        ...(options.issuer ? { issuer: options.issuer } : {}),
        ...(options.audience ? { audience: options.audience } : {}),
      }
      payload =
        key instanceof Uint8Array
          ? (await jwtVerify(m[1], key, verifyOptions)).payload
          : (await jwtVerify(m[1], key, verifyOptions)).payload
    } catch (e) {
      throw new AuthError("unauthorized", `invalid token: ${e instanceof Error ? e.message : String(e)}`)
    }
    const tenant = payload[tenantClaim]
    if (typeof tenant !== "string" || !/^[A-Za-z0-9_.-]{1,128}$/.test(tenant)) {
      throw new AuthError("forbidden", `token has no valid '${tenantClaim}' claim`)
    }
    return { tenant, subject: String(payload.sub ?? "unknown"), scopes: scopesOf(payload) }
  }
}
