// verifyReceipts: which receipts fail and why. Signatures catch an edited record; the chain catches a deleted,
// reordered, duplicated or inserted one.
import { sha256Hex } from "../ledger/index.ts"
import { linkText, recordDigest } from "./chain.ts"
import { type AuditReceiptRecord, type Receipt, receiptPayloadText, receiptShapeProblem } from "./record.ts"
import { hmacSha256Hex, timingSafeEqual } from "./signer.ts"

/** Checks a compact JWS over `text`; `jwksVerifier(jwks)` from `mycelium-runtime/receipts/jws` makes one. */
export type JwsVerifier = (jws: string, text: string) => Promise<boolean>

export interface ReceiptKeys {
  /** HMAC signing keys (the original's `signing_key`); any one matching is enough (rotation). */
  readonly hmac?: string | readonly string[]
  /** For JWS receipts: e.g. `jwksVerifier(publicJwks)`. Kept out of the core so the core does not load jose. */
  readonly jws?: JwsVerifier
}

export type ReceiptFailureReason =
  /** Not a receipt at all (missing or mistyped fields). */
  | "bad_shape"
  /** The record's signature does not match its content under any key given. */
  | "bad_signature"
  /** The chain link's digest or signature does not match (a forged or edited link). */
  | "bad_link"
  /**
   * The receipt has no link, and `requireChain` was set or a chained receipt (of any agent or chain) comes before it
   * in the list or by timestamp: a stripped link, which would hide a deleted receipt.
   */
  | "unchained"
  /** Sequence numbers are missing before this receipt (a receipt was deleted or withheld). */
  | "gap"
  /** This receipt comes after one with a higher sequence number. */
  | "reorder"
  /** Another receipt claims the same place in the chain with other content. */
  | "fork"
  /** The same receipt appears twice: the same link, or the same receipt id (a replayed copy). */
  | "duplicate"
  /** The link does not point at its predecessor's digest (an inserted receipt or a spliced chain). */
  | "broken_chain"
  /** The chain ends before the head the caller knows of (receipts deleted from the end). */
  | "truncated"

export interface ReceiptFailure {
  /** Position in the list given to `verifyReceipts`. */
  readonly index: number
  readonly receiptId: string | null
  readonly reason: ReceiptFailureReason
  readonly message: string
}

export interface ReceiptVerification {
  readonly ok: boolean
  /** How many receipts passed every check. */
  readonly valid: number
  readonly failures: ReceiptFailure[]
}

export interface VerifyReceiptsOptions {
  /** Every receipt must carry a chain link. Default false (the original's receipts have none). */
  readonly requireChain?: boolean
  /**
   * Unchained receipts may also follow chained ones: another writer (a Python worker, a `chain: false` emitter)
   * appends to the same store. Such a receipt's deletion is then not detected. Default false: an unchained receipt
   * after a chained one (in the list or by timestamp) is `unchained` (a stripped link). Without `requireChain`, a
   * stripped receipt moved before every chained one and signed before them all still passes.
   */
  readonly allowUnchained?: boolean
  /**
   * The list is a slice: a chain may start after seq 0. Default false: every chain must start at 0, so a deleted
   * first receipt is a gap.
   */
  readonly partial?: boolean
  /** The newest link the caller knows per chain (from an earlier check or another copy): detects a cut tail. */
  readonly heads?: Readonly<Record<string, { readonly seq: number; readonly digest: string }>>
}

const looksLikeJws = (s: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(s)

// A verifier of the caller's own may throw on a hostile JWS; that is a signature that does not verify.
async function jwsValid(jws: JwsVerifier, signature: string, text: string): Promise<boolean> {
  try {
    return (await jws(signature, text)) === true
  } catch {
    return false
  }
}

async function signatureValid(text: string, signature: string, keys: ReceiptKeys): Promise<boolean> {
  const { hmac, jws } = keys ?? {}
  if (looksLikeJws(signature)) return typeof jws === "function" ? await jwsValid(jws, signature, text) : false
  const secrets: readonly unknown[] = typeof hmac === "string" ? [hmac] : Array.isArray(hmac) ? hmac : []
  // The empty key is everyone's key (an unset variable, `?? ""`): no signer accepts it, so it verifies nothing.
  // Nor does one holding an unpaired surrogate: UTF-8 makes it U+FFFD, so it verified another key's receipts.
  for (const secret of secrets)
    if (
      typeof secret === "string" &&
      secret !== "" &&
      secret.isWellFormed() &&
      timingSafeEqual(await hmacSha256Hex(secret, text), signature)
    )
      return true
  return false
}

/** Checks one record's signature, as the original's `verify_receipt` does (HMAC) or against a JWKS (JWS). */
export async function verifyReceipt(record: AuditReceiptRecord, keys: ReceiptKeys): Promise<boolean> {
  try {
    if (receiptShapeProblem(record) !== null) return false
    return await signatureValid(receiptPayloadText(record), record.signature, keys)
  } catch {
    return false
  }
}

function idOf(r: unknown): string | null {
  try {
    const id = (r as { receipt_id?: unknown } | null)?.receipt_id
    return typeof id === "string" ? id : null
  } catch {
    return null
  }
}

// A caller's head, own members only (a chain may be named "constructor"); null when it is not {seq, digest}, which
// fails closed: a head that cannot be compared must not switch the truncation check off.
function headOf(
  heads: VerifyReceiptsOptions["heads"],
  ledger: string,
): { readonly seq: number; readonly digest: string } | null | undefined {
  if (!heads || !Object.hasOwn(heads, ledger)) return undefined
  const h = heads[ledger] as { seq?: unknown; digest?: unknown } | null | undefined
  if (typeof h !== "object" || h === null) return null
  return Number.isSafeInteger(h.seq) && (h.seq as number) >= 0 && typeof h.digest === "string"
    ? { seq: h.seq as number, digest: h.digest }
    : null
}

interface Placed {
  readonly index: number
  readonly id: string
  readonly seq: number
  readonly prev: string | null
  readonly digest: string
}

/**
 * Verifies signatures and chains. Receipts of several chains may be mixed; each chain is checked in the order
 * given. Never throws for bad input: every problem is a failure with a reason.
 */
export async function verifyReceipts(
  receipts: readonly unknown[],
  keys: ReceiptKeys,
  options?: VerifyReceiptsOptions | null,
): Promise<ReceiptVerification> {
  // A forgotten await (a Promise) or a page object has no receipts to fail: it must not read as all verified.
  if (!Array.isArray(receipts))
    return {
      ok: false,
      valid: 0,
      failures: [{ index: -1, receiptId: null, reason: "bad_shape", message: "not an array of receipts" }],
    }
  options ??= {}
  const failures: ReceiptFailure[] = []
  const bad = new Set<number>()
  const fail = (index: number, receiptId: string | null, reason: ReceiptFailureReason, message: string) => {
    failures.push({ index, receiptId, reason, message })
    bad.add(index)
  }
  const chains = new Map<string, Placed[]>()
  // Where each receipt id was first seen: the id is a record's identity, links or not.
  const ids = new Map<string, { readonly ledger: string; readonly seq: number } | null>()
  // The first chained receipt's place and the earliest chained timestamp, of any agent: agents share chains
  // (`chain: "payments"`), so an agent with no chained receipt left may still have had its links stripped.
  let firstChained = Number.POSITIVE_INFINITY
  let chainedSince = Number.POSITIVE_INFINITY
  const loose: Array<[index: number, id: string, time: number]> = []

  for (let i = 0; i < receipts.length; i++) {
    const r = receipts[i] as Receipt
    let shape: string | null
    let payload = ""
    try {
      shape = receiptShapeProblem(r)
      if (shape === null) payload = receiptPayloadText(r)
    } catch (error) {
      // A cycle, a throwing getter or a proxy (objects handed in, never parsed JSON), or nesting deeper than the
      // stack: not a receipt this can write, so not one anyone signed.
      shape = `it cannot be read as JSON (${error instanceof Error ? error.name : typeof error})`
    }
    if (shape !== null) {
      fail(i, idOf(r), "bad_shape", `not a receipt: ${shape}`)
      continue
    }
    // A copy of a receipt (its link stripped, or unchained like the original's) is a well-signed record: only its
    // id tells that it was counted already. Two copies claiming one chain place are left to the chain checks.
    const first = ids.get(r.receipt_id)
    const place = r.chain ? { ledger: r.chain.ledger, seq: r.chain.seq } : null
    if (
      first !== undefined &&
      !(first && place && first.ledger === place.ledger && first.seq === place.seq)
    ) {
      fail(i, r.receipt_id, "duplicate", `receipt ${r.receipt_id} appears twice: a replayed copy`)
      continue
    }
    if (first === undefined) ids.set(r.receipt_id, place)
    if (!(await signatureValid(payload, r.signature, keys)))
      fail(i, r.receipt_id, "bad_signature", "the signature does not match the record under any key given")
    const link = r.chain
    if (!link) {
      if (options.requireChain) fail(i, r.receipt_id, "unchained", "the receipt carries no chain link")
      else if (!options.allowUnchained) loose.push([i, r.receipt_id, r.timestamp])
      continue
    }
    firstChained = Math.min(firstChained, i)
    chainedSince = Math.min(chainedSince, r.timestamp)
    const text = linkText(link.ledger, link.seq, link.prev, recordDigest(r, payload))
    // A bad link still holds its claimed place, so its neighbours are not reported as gaps because of it.
    if (sha256Hex(text) !== link.digest || !(await signatureValid(text, link.mac, keys)))
      fail(
        i,
        r.receipt_id,
        "bad_link",
        `the chain link (${link.ledger} #${link.seq}) does not match the record or key`,
      )
    const list = chains.get(link.ledger) ?? []
    chains.set(link.ledger, list)
    list.push({ index: i, id: r.receipt_id, seq: link.seq, prev: link.prev, digest: link.digest })
  }

  // Unchained receipts may precede the chains (the original's, or `chain: false`), never follow them: moved to the
  // front, a stripped receipt is usually still later than the chains' start. Not always: a receipt is signed before
  // its outcome write and appended after it, so one signed earlier can sit behind a chained one. No slack closes
  // that without failing honest files; `requireChain` does.
  for (const [i, id, time] of loose)
    if (firstChained < i || time >= chainedSince)
      fail(
        i,
        id,
        "unchained",
        "no chain link, after a chained receipt (allowUnchained if another writer adds unchained ones)",
      )
  for (const [ledger, list] of chains) {
    // Order as given: a receipt after a higher sequence number is out of place.
    let max = -1
    for (const p of list) {
      if (p.seq < max) fail(p.index, p.id, "reorder", `chain '${ledger}' #${p.seq} comes after #${max}`)
      max = Math.max(max, p.seq)
    }
    // Sequence as linked: one receipt per number, each pointing at its predecessor, no holes.
    const bySeq = new Map<number, Placed>()
    for (const p of list) {
      const seen = bySeq.get(p.seq)
      if (!seen) bySeq.set(p.seq, p)
      else if (seen.digest === p.digest)
        fail(p.index, p.id, "duplicate", `chain '${ledger}' #${p.seq} appears twice`)
      else fail(p.index, p.id, "fork", `chain '${ledger}' has two different receipts at #${p.seq}`)
    }
    const seqs = [...bySeq.keys()].sort((a, b) => a - b)
    let prev: Placed | null = null
    for (const s of seqs) {
      const p = bySeq.get(s) as Placed
      if (prev === null) {
        if (s !== 0 && !options.partial)
          fail(p.index, p.id, "gap", `chain '${ledger}' starts at #${s}: receipts #0..#${s - 1} are missing`)
        else if (s === 0 && p.prev !== null)
          fail(p.index, p.id, "broken_chain", `chain '${ledger}' #0 points at a predecessor`)
      } else if (s !== prev.seq + 1) {
        fail(p.index, p.id, "gap", `chain '${ledger}' jumps from #${prev.seq} to #${s}: receipts are missing`)
      } else if (p.prev !== prev.digest) {
        fail(p.index, p.id, "broken_chain", `chain '${ledger}' #${s} does not point at #${prev.seq}`)
      }
      prev = p
    }
    const head = headOf(options.heads, ledger)
    if (head !== undefined && prev) {
      if (head === null)
        fail(prev.index, prev.id, "truncated", `the known head of chain '${ledger}' is not {seq, digest}`)
      else if (prev.seq < head.seq || (prev.seq === head.seq && prev.digest !== head.digest))
        fail(
          prev.index,
          prev.id,
          "truncated",
          `chain '${ledger}' ends at #${prev.seq}, the known head is #${head.seq}`,
        )
      else {
        // The chain grew past the known head: the head must still be in it, or its history was rewritten.
        const known = bySeq.get(head.seq)
        if (known && known.digest !== head.digest)
          fail(
            known.index,
            known.id,
            "fork",
            `chain '${ledger}' #${head.seq} is not the known head: rewritten`,
          )
      }
    }
  }
  // Heads are read as a plain object's own keys: a Map (or a number) has none, which switched the check off.
  if (options.heads != null && Object.prototype.toString.call(options.heads) !== "[object Object]")
    failures.push({
      index: -1,
      receiptId: null,
      reason: "truncated",
      message: "heads must be a plain object: pass Object.fromEntries(map)",
    })
  for (const ledger of Object.keys(options.heads ?? {}))
    if (!chains.has(ledger)) {
      const head = headOf(options.heads, ledger)
      failures.push({
        index: -1,
        receiptId: null,
        reason: "truncated",
        message: head
          ? `chain '${ledger}' has no receipts, the known head is #${head.seq}`
          : `the known head of chain '${ledger}' is not {seq, digest}`,
      })
    }

  failures.sort((a, b) => a.index - b.index)
  return { ok: failures.length === 0, valid: receipts.length - bad.size, failures }
}
