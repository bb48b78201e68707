// The hash chain: each receipt's link commits to its record and to the previous link, per ledger.
import { canonicalJson, sha256Hex } from "../ledger/index.ts"
import { AuditReceiptError } from "./errors.ts"
import { type AuditReceiptRecord, type ReceiptLink, receiptPayloadText } from "./record.ts"
import type { ReceiptSigner } from "./signer.ts"

/** The newest link of a chain: what the next receipt's link continues from. */
export interface ChainTail {
  readonly seq: number
  readonly digest: string
}

/** SHA-256 hex of a signed record: its payload text and its signature. `payloadText` if already computed. */
export function recordDigest(record: AuditReceiptRecord, payloadText?: string): string {
  return sha256Hex(`${payloadText ?? receiptPayloadText(record)}\n${record.signature}`)
}

/** The text a link's digest and mac cover. */
export function linkText(ledger: string, seq: number, prev: string | null, record: string): string {
  return canonicalJson({ ledger, prev, record, seq })
}

/** The link that appends `record` after `tail` (null: first of its chain). */
export async function sealLink(
  signer: ReceiptSigner,
  ledger: string,
  tail: ChainTail | null,
  record: AuditReceiptRecord,
  payloadText?: string,
): Promise<ReceiptLink> {
  const seq = tail ? tail.seq + 1 : 0
  const prev = tail ? tail.digest : null
  const text = linkText(ledger, seq, prev, recordDigest(record, payloadText))
  const mac = await signer.sign(text)
  // As for the record's signature (ReceiptEmitter.sign): a link no verifier can read is refused, not stored.
  if (typeof mac !== "string" || mac === "")
    throw new AuditReceiptError(`the receipt signer returned ${typeof mac}, not a signature string`)
  return { ledger, seq, prev, digest: sha256Hex(text), mac }
}

/** How a store asks for the link of the receipt it appends, given its chain's tail read under its lock. */
export interface ChainSealer {
  readonly ledger: string
  seal(tail: ChainTail | null): Promise<ReceiptLink>
}
