// Asymmetric receipts: compact JWS (EdDSA or ES256) with a `kid`, verifiable by anyone holding the public JWKS.
// The only module of the package's core that imports jose, so code that does not sign or verify JWS never loads it.
import {
  CompactSign,
  type CryptoKey,
  compactVerify,
  createLocalJWKSet,
  importJWK,
  type JSONWebKeySet,
  type JWK,
} from "jose"
import { AuditReceiptError } from "./errors.ts"
import type { ReceiptSigner } from "./signer.ts"

export type ReceiptJwsAlgorithm = "EdDSA" | "ES256"

export interface JwsReceiptSignerOptions {
  /** The private key: a Web Crypto `CryptoKey` or a private JWK. */
  readonly privateKey: CryptoKey | JWK
  readonly alg: ReceiptJwsAlgorithm
  /** Key id written into every JWS header; verifiers pick the JWKS key by it (rotation). */
  readonly kid: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Signs receipts as compact JWS. The JWS payload is the exact text an HMAC receipt would sign. */
export function jwsReceiptSigner(options: JwsReceiptSignerOptions): ReceiptSigner {
  const { alg, kid } = options
  if (alg !== "EdDSA" && alg !== "ES256")
    throw new AuditReceiptError(`JWS receipts use EdDSA or ES256, not '${alg}'`)
  if (!kid) throw new AuditReceiptError("JWS receipts need a 'kid' so verifiers can pick the public key")
  let key: Promise<CryptoKey> | null = null
  const resolveKey = async (): Promise<CryptoKey> => {
    const k = options.privateKey
    if (!("kty" in k)) return k as CryptoKey
    return (await importJWK(k, alg)) as CryptoKey
  }
  return {
    kind: "jws",
    async sign(text) {
      key ??= resolveKey()
      return new CompactSign(encoder.encode(text))
        .setProtectedHeader({ alg, kid, typ: "mycelium-receipt+jws" })
        .sign(await key)
    },
  }
}

/** True iff `jws` is a valid signature by a key of `jwks` over exactly `text`. Never throws for bad input. */
export async function verifyJwsText(jws: string, text: string, jwks: JSONWebKeySet): Promise<boolean> {
  try {
    const { payload } = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ["EdDSA", "ES256"] })
    return decoder.decode(payload) === text
  } catch {
    return false
  }
}

export type { JSONWebKeySet }
