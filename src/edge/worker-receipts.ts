// The worker's audit receipts. With the secret LEDGER_RECEIPT_JWK (a private Ed25519 or P-256 JWK with a `kid`),
// every tenant's outcomes and releases are signed as JWS into that tenant's Durable Object. JWS rather than HMAC:
// tenants and their auditors verify with the public key alone, so no tenant holds a secret that could forge another
// tenant's receipts.
import type { JWK } from "jose"
import { DurableObjectReceiptStore, type GuardObjectNamespace } from "../adapters/durable-object-guards.ts"
import { InvalidOptionError } from "../core/errors.ts"
import { ReceiptEmitter } from "../core/receipts/emitter.ts"
import { jwksVerifier, jwsReceiptSigner, type ReceiptJwsAlgorithm } from "../core/receipts/jws.ts"
import type { ReceiptSigner } from "../core/receipts/signer.ts"
import type { TenantReceipts } from "./context.ts"

const ALG_OF: Readonly<Record<string, ReceiptJwsAlgorithm>> = { Ed25519: "EdDSA", "P-256": "ES256" }

const refuse = (why: string): never => {
  // Never the value: it is a private key, and this message is an HTTP answer.
  throw new InvalidOptionError(`LEDGER_RECEIPT_JWK ${why} (docs/http-api.md, "The Cloudflare worker")`)
}

/**
 * Each tenant's emitter and verifier, once the key has signed and verified one text: a key that parses but cannot
 * sign is a misconfiguration before any call, not during one.
 */
export async function workerReceipts(
  namespace: GuardObjectNamespace,
  secret: string,
): Promise<(tenant: string) => TenantReceipts> {
  let jwk: JWK
  try {
    jwk = JSON.parse(secret) as JWK
  } catch {
    return refuse("is not JSON: set it to a private JWK")
  }
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) return refuse("is not a JWK object")
  if (typeof jwk.d !== "string") return refuse("is not a private key (it has no 'd')")
  if (typeof jwk.kid !== "string" || !jwk.kid) return refuse("needs a 'kid', which verifiers pick the key by")
  const alg = typeof jwk.crv === "string" && Object.hasOwn(ALG_OF, jwk.crv) ? ALG_OF[jwk.crv] : undefined
  if (!alg || (jwk.alg !== undefined && jwk.alg !== alg))
    return refuse("must be an Ed25519 (EdDSA) or P-256 (ES256) key")
  let signer: ReceiptSigner
  try {
    signer = jwsReceiptSigner({ privateKey: jwk, alg, kid: jwk.kid })
  } catch {
    // The signer's own checks (an 'x' or 'y' that is not base64url, key_ops without "sign") throw its
    // AuditReceiptError, which the worker answered 409 audit_receipt_error, naming no variable.
    return refuse("does not import as a signing key")
  }
  // The public members only: a key as Web Crypto exports it carries key_ops ["sign"] (and ext), and a verifying
  // key with those usages fails to import, so every receipt would read bad_signature on /v1/receipts/verify.
  const { kty, crv, x, y, kid } = jwk
  const publicJwk: JWK = { kty, crv, x, kid, alg, ...(y !== undefined ? { y } : {}) }
  const keys = { jws: jwksVerifier({ keys: [publicJwk] }) }
  const jws = await signer.sign("{}").catch(() => refuse("does not import as a signing key"))
  // A key whose public half is not its own would sign receipts nobody could verify.
  if (!(await keys.jws(jws, "{}"))) refuse("has a public half (x, y) that does not match its 'd'")
  return (tenant) => ({
    emitter: new ReceiptEmitter({
      signer,
      store: new DurableObjectReceiptStore(namespace, { name: `tenant:${tenant}` }),
      // The tenant is the agent identity this API knows for certain (from its token); also the chain's name.
      agentId: tenant,
    }),
    keys,
  })
}
