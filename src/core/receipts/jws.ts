// Asymmetric receipts: compact JWS (EdDSA or ES256) with a `kid`, verifiable by anyone holding the public JWKS.
// The only module that imports jose. It is its own package entry (`mycelium-runtime/receipts/jws`), not part of
// the core barrel, so the core entry bundles without jose.
import {
  base64url,
  CompactSign,
  type CryptoKey,
  compactVerify,
  createLocalJWKSet,
  decodeProtectedHeader,
  importJWK,
  type JSONWebKeySet,
  type JWK,
} from "jose"
import { AuditReceiptError } from "./errors.ts"
import type { ReceiptSigner } from "./signer.ts"
import type { JwsVerifier } from "./verify.ts"

export type ReceiptJwsAlgorithm = "EdDSA" | "ES256"
const ALGS: ReceiptJwsAlgorithm[] = ["EdDSA", "ES256"]

export interface JwsReceiptSignerOptions {
  /** The private key: a Web Crypto `CryptoKey` or a private JWK. */
  readonly privateKey: CryptoKey | JWK
  readonly alg: ReceiptJwsAlgorithm
  /** Key id written into every JWS header; verifiers pick the JWKS key by it (rotation). */
  readonly kid: string
}

/** The `typ` header of every receipt JWS; the verifier accepts no other. */
const RECEIPT_TYP = "mycelium-receipt+jws"
const encoder = new TextEncoder()
const decoder = new TextDecoder()

// What jose checks only when it signs: a public key, a key of the other algorithm or no key at all was taken here and
// failed every receipt's signing after the ledgered tool had run, so every outcome was recorded without its receipt.
function privateKeyProblem(key: unknown, alg: ReceiptJwsAlgorithm): string | null {
  const [kty, crv, name] = alg === "EdDSA" ? ["OKP", "Ed25519", "Ed25519"] : ["EC", "P-256", "ECDSA"]
  if (typeof key !== "object" || key === null) return `the key is ${key === null ? "null" : typeof key}`
  if ("kty" in key) {
    const jwk = key as JWK
    if (jwk.kty !== kty || jwk.crv !== crv)
      return `the JWK is ${jwk.kty}/${jwk.crv}, ${alg} needs ${kty}/${crv}`
    if (typeof jwk.d !== "string") return "the JWK is public (no 'd')"
    // Web Crypto refuses these only when the key is imported, at the first receipt.
    for (const m of kty === "EC" ? (["d", "x", "y"] as const) : (["d", "x"] as const)) {
      const v = jwk[m]
      if (typeof v !== "string" || !/^[\w-]+$/.test(v)) return `the JWK's '${m}' is not base64url`
    }
    return Array.isArray(jwk.key_ops) && !jwk.key_ops.includes("sign")
      ? "the JWK's key_ops lack 'sign'"
      : null
  }
  const k = key as { type?: unknown; algorithm?: { name?: unknown; namedCurve?: unknown } }
  if (k.type !== "private") return `the key is ${String(k.type)}`
  if (k.algorithm && (k.algorithm.name !== name || (alg === "ES256" && k.algorithm.namedCurve !== crv)))
    return `the key is ${String(k.algorithm.name)}, ${alg} needs ${name}${alg === "ES256" ? ` ${crv}` : ""}`
  return null
}

/** Signs receipts as compact JWS. The JWS payload is the exact text an HMAC receipt would sign. */
export function jwsReceiptSigner(options: JwsReceiptSignerOptions): ReceiptSigner {
  const { alg, kid } = options
  if (alg !== "EdDSA" && alg !== "ES256")
    throw new AuditReceiptError(`JWS receipts use EdDSA or ES256, not '${alg}'`)
  if (!kid) throw new AuditReceiptError("JWS receipts need a 'kid' so verifiers can pick the public key")
  // A Node KeyObject as its JWK: so its algorithm is checked here (jose checked it only when signing), and it signs
  // in workerd, whose KeyObject has no toCryptoKey for jose.
  const given = options.privateKey as unknown as { [Symbol.toStringTag]?: unknown; export(o: object): JWK }
  const k = given?.[Symbol.toStringTag] === "KeyObject" ? given.export({ format: "jwk" }) : options.privateKey
  const problem = privateKeyProblem(k, alg)
  if (problem) throw new AuditReceiptError(`JWS receipts need the private ${alg} key: ${problem}`)
  let key: Promise<CryptoKey> | null = null
  const resolveKey = async (): Promise<CryptoKey> => {
    if (!("kty" in k)) return k as CryptoKey
    return (await importJWK(k, alg)) as CryptoKey
  }
  return {
    kind: "jws",
    async sign(text) {
      key ??= resolveKey()
      return await new CompactSign(encoder.encode(text))
        .setProtectedHeader({ alg, kid, typ: RECEIPT_TYP })
        .sign(await key)
    },
  }
}

/**
 * A verifier for `verifyReceipts(receipts, { jws: jwksVerifier(jwks) })`: true iff a JWS is a valid signature by
 * a key of `jwks` (picked by `kid`) over exactly the receipt's text. Needs only public keys; never throws.
 */
export function jwksVerifier(jwks: JSONWebKeySet): JwsVerifier {
  const keys = createLocalJWKSet(jwks)
  const kids = new Set(jwks.keys.map((k) => k.kid))
  return async (jws, text) => {
    try {
      // base64url decoders ignore the unused low bits of the last character, so up to 3 other spellings of one
      // signature verify; a receipt's signature string is part of its identity (the chain's record digest), so
      // only the canonical spelling does. (ES256's s and n - s both stay valid: Web Crypto signs either.)
      const sig = jws.slice(jws.lastIndexOf(".") + 1)
      if (base64url.encode(base64url.decode(sig)) !== sig) return false
      // Refused here, synchronously: jose refuses another alg or a `crit` in a promise rejected before its handler
      // is attached, which workerd reports as an unhandled rejection (a log error per hostile receipt).
      const h = decodeProtectedHeader(jws)
      if (!ALGS.includes(h.alg as ReceiptJwsAlgorithm) || h.crit !== undefined || h.b64 !== undefined)
        return false
      if (typeof h.kid !== "string" || !kids.has(h.kid)) return false
      const { payload, protectedHeader } = await compactVerify(jws, keys, { algorithms: ALGS })
      // Only what a receipt signer signed: a JWT or other JWS made with the same key is not a receipt.
      return protectedHeader.typ === RECEIPT_TYP && decoder.decode(payload) === text
    } catch {
      return false
    }
  }
}

export type { JSONWebKeySet }
