// Signing without any JOSE library: HMAC-SHA256 over Web Crypto, as the original signs (lowercase hex).
import { toHex } from "../ledger/index.ts"
import { AuditReceiptError } from "./errors.ts"

/** Signs the canonical text of a receipt or a chain link. */
export interface ReceiptSigner {
  /** `hmac`: hex HMAC-SHA256 (Python-compatible); `jws`: compact JWS whose payload is the signed text. */
  readonly kind: "hmac" | "jws"
  sign(text: string): Promise<string>
}

const encoder = new TextEncoder()
const keyCache = new Map<string, Promise<CryptoKey>>()

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret)
  if (!key) {
    key = globalThis.crypto.subtle.importKey(
      "raw",
      encoder.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    )
    if (keyCache.size > 32) keyCache.clear()
    keyCache.set(secret, key)
  }
  return key
}

/** HMAC-SHA256 of `text` (UTF-8) under `secret` (UTF-8 bytes, as the original's `signing_key.encode()`), hex. */
export async function hmacSha256Hex(secret: string, text: string): Promise<string> {
  const sig = await globalThis.crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(text))
  return toHex(new Uint8Array(sig))
}

/** Constant-time comparison of two strings of equal length. */
export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/** The original's symmetric signer: a receipt it signs verifies with Python's `verify_receipt` and the same key. */
export function hmacReceiptSigner(signingKey: string): ReceiptSigner {
  if (typeof signingKey !== "string" || signingKey.length === 0)
    throw new AuditReceiptError("audit receipts need a non-empty signing key (the original's signing_key)")
  return { kind: "hmac", sign: (text) => hmacSha256Hex(signingKey, text) }
}
