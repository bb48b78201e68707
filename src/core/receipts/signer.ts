// Signing without any JOSE library: HMAC-SHA256, as the original signs (lowercase hex).
import { sha256, sha256Hex } from "../ledger/index.ts"
import { AuditReceiptError } from "./errors.ts"

/** Signs the canonical text of a receipt or a chain link. */
export interface ReceiptSigner {
  /** `hmac`: hex HMAC-SHA256 (Python-compatible); `jws`: compact JWS whose payload is the signed text. */
  readonly kind: "hmac" | "jws"
  sign(text: string): Promise<string>
}

const encoder = new TextEncoder()

// HMAC-SHA256 (RFC 2104) on the ledger's synchronous SHA-256. Web Crypto's HMAC is async and, in Node, hops to a
// thread pool: measured ~340 us per signature against ~5 us for a native one, which made a receipt cost more
// than the ledgered call itself. The padded key blocks are kept per secret.
const pads = new Map<string, { inner: Uint8Array; outer: Uint8Array }>()

function padsOf(secret: string): { inner: Uint8Array; outer: Uint8Array } {
  let p = pads.get(secret)
  if (!p) {
    let key: Uint8Array = encoder.encode(secret)
    if (key.length > 64) key = sha256(key)
    const inner = new Uint8Array(64).fill(0x36)
    const outer = new Uint8Array(64).fill(0x5c)
    for (let i = 0; i < key.length; i++) {
      inner[i] = (inner[i] as number) ^ (key[i] as number)
      outer[i] = (outer[i] as number) ^ (key[i] as number)
    }
    p = { inner, outer }
    if (pads.size > 32) pads.clear()
    pads.set(secret, p)
  }
  return p
}

function fromHex(hex: string, into: Uint8Array, at: number): void {
  for (let i = 0; i < 32; i++) into[at + i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16)
}

/**
 * HMAC-SHA256 of `text` (UTF-8) under `secret` (UTF-8 bytes, as the original's `signing_key.encode()`), hex.
 * Hashes through `sha256Hex`, so a native digest registered with `configureSha256` (`mycelium-runtime/node`)
 * speeds it up too.
 */
export function hmacSha256HexSync(secret: string, text: string): string {
  const { inner, outer } = padsOf(secret)
  const msg = encoder.encode(text)
  const a = new Uint8Array(64 + msg.length)
  a.set(inner)
  a.set(msg, 64)
  const b = new Uint8Array(96)
  b.set(outer)
  fromHex(sha256Hex(a), b, 64)
  return sha256Hex(b)
}

/** Async form of `hmacSha256HexSync` (the signer interface is async so JWS signers fit it). */
export async function hmacSha256Hex(secret: string, text: string): Promise<string> {
  return hmacSha256HexSync(secret, text)
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
  // UTF-8 writes an unpaired surrogate as U+FFFD, so 'k\ud800' and 'k\ufffd' signed alike; Python's
  // signing_key.encode() refuses such a key.
  if (!signingKey.isWellFormed())
    throw new AuditReceiptError("the signing key holds an unpaired surrogate: use a key in valid Unicode")
  return { kind: "hmac", sign: (text) => hmacSha256Hex(signingKey, text) }
}
