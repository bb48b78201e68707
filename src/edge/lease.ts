// The lease credential the server hands a claimant. Rows store only its hash as `owner`, so a reader who sees the
// row (owner, fence) still cannot move it: every later call must present the secret itself.
import { sha256Hex } from "../core/ledger/index.ts"

/** A fresh 256-bit secret, base64url. */
export function mintLease(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(32))
  let s = ""
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

/** The owner name a lease writes into rows. */
export function ownerForLease(lease: string): string {
  return `lease:${sha256Hex(`mycelium-lease:${lease}`).slice(0, 40)}`
}
