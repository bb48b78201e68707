// The Python original's AuditReceiptRecord (audit_receipt.py), field for field, and its signed payload.
import { hasDuplicateKey } from "../duplicate-keys.ts"
import type { ExactJsonValue } from "../exact-json.ts"
import { isObject } from "../is-object.ts"
import { canonicalJson, canonicalString, pythonFloatRepr } from "../ledger/model/canonical.ts"
import { parsePythonJson, pythonDumps } from "../python-json.ts"

export type ReceiptStatus = "completed" | "failed"
export type ReceiptActionKind = "tool" | "task"

/**
 * JSON inside a receipt. Signed here it is plain JSON; read back from a store it may also hold a boxed `Number` (a
 * float the original wrote as one, `100.0`) or a `bigint` (an int beyond 2^53), so the signed text stays the same
 * (`parseReceiptJson`). `+x` unboxes a Number.
 */
export type ReceiptJsonValue = ExactJsonValue

/** A receipt as the original stores it (snake_case JSON): one line of its JSONL file. */
export interface AuditReceiptRecord {
  readonly receipt_id: string
  readonly agent_id: string
  readonly action: string
  readonly action_kind: ReceiptActionKind
  readonly request_id: string
  readonly inputs: {
    readonly args: readonly ReceiptJsonValue[]
    readonly kwargs: Readonly<Record<string, ReceiptJsonValue>>
  }
  readonly outputs: ReceiptJsonValue
  readonly status: ReceiptStatus
  /** Epoch seconds (a Python float: signed as `1767225600.0`, never `1767225600`). */
  readonly timestamp: number
  /** Lowercase hex HMAC-SHA256 (Python-compatible) or a compact JWS. */
  readonly signature: string
  readonly error: string | null
}

/**
 * The link that chains a receipt to its predecessor in one ledger's sequence. It is kept beside the original's
 * record (never inside it), so the original still reads and verifies the record.
 */
export interface ReceiptLink {
  /** Name of the chain (one per ledger/agent): sequences and predecessors are per chain. */
  readonly ledger: string
  /** 0 for the first receipt of the chain, then +1 each. */
  readonly seq: number
  /** `digest` of the previous link, or null for seq 0. */
  readonly prev: string | null
  /** SHA-256 hex over `{ledger, prev, record, seq}`, `record` being the record's digest. The next link's `prev`. */
  readonly digest: string
  /** Signature (HMAC hex or JWS) over the same text as `digest`: a forged link fails without the key. */
  readonly mac: string
}

/** A stored receipt: the original's record plus, when chained, its link. */
export type Receipt = AuditReceiptRecord & { readonly chain?: ReceiptLink | null }

const PAYLOAD_KEYS = [
  "action",
  "action_kind",
  "agent_id",
  "error",
  "inputs",
  "outputs",
  "receipt_id",
  "request_id",
  "status",
] as const

/**
 * The text the original signs: `json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)` of every
 * field but `signature`. `timestamp` is a Python float, so it is written in Python's float repr even when integral.
 */
export function receiptPayloadText(record: Omit<AuditReceiptRecord, "signature">): string {
  let out = "{"
  for (const k of PAYLOAD_KEYS) out += `${canonicalString(k)}:${canonicalJson(record[k])},`
  return `${out}"timestamp":${pythonFloatRepr(Number(record.timestamp))}}`
}

const RECORD_KEYS = [
  "receipt_id",
  "agent_id",
  "action",
  "action_kind",
  "request_id",
  "inputs",
  "outputs",
  "status",
  "timestamp",
  "signature",
  "error",
] as const

/**
 * One line of the original's JSONL receipt file: `json.dumps(record.to_dict(), default=str)`, with `timestamp` a
 * float (`1767225600.0`), so Python reads back the value it signed.
 */
export function receiptJsonLine(record: AuditReceiptRecord): string {
  const parts = RECORD_KEYS.map((k) =>
    k === "timestamp"
      ? `"timestamp": ${pythonFloatRepr(Number(record.timestamp))}`
      : `${canonicalString(k)}: ${pythonDumps(record[k])}`,
  )
  return `{${parts.join(", ")}}`
}

/**
 * One receipt with its chain link as one JSONL line, in the exact forms its signature covers (`100.0` stays a
 * float, a big integer stays its digits): what `GET /v1/receipts?format=jsonl` sends, and what `parseReceiptJson`
 * and `mycelium receipts verify FILE` read back. The record's fields come first, as `receiptJsonLine` writes them;
 * the original's reader (`from_dict`) drops the `chain` member, so the line loads there as it is.
 */
export function receiptExportLine(receipt: Receipt): string {
  const line = receiptJsonLine(receipt)
  return receipt.chain ? `${line.slice(0, -1)}, "chain": ${pythonDumps(receipt.chain)}}` : line
}

/**
 * A stored receipt's JSON, read so that its signature still verifies: a float the original signed as a float
 * (`"amount": 100.0`) stays one (a boxed `Number` inside `inputs`/`outputs`; `+x` unboxes it), and an integer
 * beyond 2^53 stays exact (`bigint`). `JSON.parse` would make `100.0` the number 100, which the payload text writes
 * as `100`, so the record would read as tampered. `timestamp` is always a float, so it comes back a plain number.
 * Throws SyntaxError on invalid JSON, or on a member named twice (only the last is signed).
 */
export function parseReceiptJson(text: string): unknown {
  const v = parsePythonJson(text)
  // A member named twice: the signature covers only the last, the text shows both.
  if (hasDuplicateKey(text)) throw new SyntaxError("a JSON member is named twice (an unsigned copy)")
  if (isObject(v) && v.timestamp instanceof Number) v.timestamp = v.timestamp.valueOf()
  return v
}

/** `rcpt-` + 16 hex characters, as the original mints them (uuid4 prefix). */
export function newReceiptId(): string {
  return `rcpt-${globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
}

/** The original's record without any link (what its JSONL line holds). */
export function recordOf(receipt: Receipt): AuditReceiptRecord {
  const { chain: _chain, ...record } = receipt
  return record
}

const RECORD_FIELDS: ReadonlySet<string> = new Set<string>([...RECORD_KEYS, "chain"])
const LINK_FIELDS: ReadonlySet<string> = new Set(["ledger", "seq", "prev", "digest", "mac"])

// The signature covers the record's fields and the link's mac its own: any other member would be an unsigned
// claim riding on a valid signature (the original's `from_dict` drops it unread: the signature never covered it).
const unknownField = (v: Record<string, unknown>, known: ReadonlySet<string>): string | undefined =>
  Object.keys(v).find((k) => !known.has(k))

/** Checks the shape of a parsed receipt (a JSONL line, an HTTP body). Returns a reason, or null when it is one. */
export function receiptShapeProblem(v: unknown): string | null {
  if (!isObject(v)) return "not a JSON object"
  const extra = unknownField(v, RECORD_FIELDS)
  if (extra !== undefined) return `'${extra}' is not a receipt field (no signature covers it)`
  for (const k of ["receipt_id", "agent_id", "action", "request_id", "signature"] as const)
    if (typeof v[k] !== "string") return `'${k}' is not a string`
  if (v.action_kind !== "tool" && v.action_kind !== "task") return "'action_kind' is not tool or task"
  if (v.status !== "completed" && v.status !== "failed") return "'status' is not completed or failed"
  if (typeof v.timestamp !== "number") return "'timestamp' is not a number"
  if (v.error !== null && typeof v.error !== "string") return "'error' is not a string or null"
  const inputs = v.inputs
  if (!isObject(inputs) || !Array.isArray(inputs.args) || !isObject(inputs.kwargs))
    return "'inputs' is not {args, kwargs}"
  if (v.chain !== undefined && v.chain !== null) {
    const c = v.chain
    if (
      !isObject(c) ||
      typeof c.ledger !== "string" ||
      typeof c.seq !== "number" ||
      typeof c.digest !== "string"
    )
      return "'chain' is not a receipt link"
    if (typeof c.mac !== "string" || (c.prev !== null && typeof c.prev !== "string"))
      return "'chain' is not a receipt link"
    const extraLink = unknownField(c, LINK_FIELDS)
    if (extraLink !== undefined) return `'chain.${extraLink}' is not a link field (no signature covers it)`
  }
  return null
}
