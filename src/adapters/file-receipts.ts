// Audit receipts in the Python original's JSONL file (one `json.dumps(record.to_dict())` per line), so either
// language appends to and verifies the other's. Chain links live in a sidecar `<path>.chain.jsonl` (one line per
// chained receipt, keyed by receipt_id): the original parses every line of its file into its record type, so a
// link inside the record would break it.
import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import { ReceiptStoreCorruptError } from "../core/receipts/errors.ts"
import {
  type AuditReceiptRecord,
  parseReceiptJson,
  type Receipt,
  type ReceiptLink,
  receiptJsonLine,
  receiptShapeProblem,
} from "../core/receipts/record.ts"
import { matchesList, type ReceiptListOptions, type ReceiptStore } from "../core/receipts/store.ts"
import { asciiJson, LockedFile, type LockedFileOptions } from "./file-kit.ts"

export type FileReceiptStoreOptions = LockedFileOptions

type LinkLine = ReceiptLink & { readonly receipt_id: string }

function parseLines<T>(
  path: string,
  text: string | null,
  check: (v: unknown) => string | null,
  parse: (line: string) => unknown,
): T[] {
  if (text === null) return []
  const out: T[] = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]?.trim()
    if (!line) continue
    let v: unknown
    try {
      v = parse(line)
    } catch {
      throw new ReceiptStoreCorruptError(
        `${path} line ${i + 1} is not JSON: repair or truncate the damaged line (a crash mid-append leaves one), then retry`,
      )
    }
    const problem = check(v)
    if (problem)
      throw new ReceiptStoreCorruptError(
        `${path} line ${i + 1} is not a receipt (${problem}): repair it, then retry`,
      )
    out.push(v as T)
  }
  return out
}

const linkProblem = (v: unknown): string | null => {
  const l = v as Partial<LinkLine> | null
  return l && typeof l.receipt_id === "string" && typeof l.ledger === "string" && typeof l.seq === "number"
    ? null
    : "not a chain link"
}

/** Appends receipts to a JSONL file under the ledger file store's cross-process lock. */
export class FileReceiptStore implements ReceiptStore {
  readonly kind = "file"
  readonly #file: LockedFile
  readonly chainPath: string
  /** Tails per chain, valid while the sidecar still has `#tailsSize` characters (appends only grow it). */
  #tails = new Map<string, ChainTail>()
  #tailsSize = -1

  constructor(path: string, options: FileReceiptStoreOptions = {}) {
    this.#file = new LockedFile(path, options)
    this.chainPath = `${this.#file.path}.chain.jsonl`
  }

  get path(): string {
    return this.#file.path
  }

  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    return this.#file.run(async () => {
      const link = chain ? await chain.seal(this.#tailsNow().get(chain.ledger) ?? null) : null
      // The record first: a crash before its link leaves an unchained receipt (reported by verifyReceipts), never
      // a link without its receipt.
      this.#file.append(`${receiptJsonLine(record)}\n`)
      if (link) {
        const line = `${asciiJson(JSON.stringify({ receipt_id: record.receipt_id, ...link }))}\n`
        this.#file.append(line, this.chainPath)
        this.#tails.set(link.ledger, { seq: link.seq, digest: link.digest })
        this.#tailsSize += line.length
      }
      return link ? { ...record, chain: link } : { ...record }
    })
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    const records = parseLines<AuditReceiptRecord>(
      this.path,
      this.#file.read(),
      receiptShapeProblem,
      parseReceiptJson,
    )
    const links = new Map<string, ReceiptLink>()
    for (const { receipt_id, ...link } of parseLines<LinkLine>(
      this.chainPath,
      this.#file.read(this.chainPath),
      linkProblem,
      JSON.parse,
    ))
      links.set(receipt_id, link)
    return records
      .map((r): Receipt => {
        const link = links.get(r.receipt_id)
        return link ? { ...r, chain: link } : r
      })
      .filter((r) => matchesList(r, options))
  }

  #tailsNow(): Map<string, ChainTail> {
    // Sidecar lines are ASCII, so its byte size tells whether another writer appended since the last read.
    if (this.#file.size(this.chainPath) === this.#tailsSize) return this.#tails
    const text = this.#file.read(this.chainPath) ?? ""
    const tails = new Map<string, ChainTail>()
    for (const l of parseLines<LinkLine>(this.chainPath, text, linkProblem, JSON.parse))
      tails.set(l.ledger, { seq: l.seq, digest: l.digest })
    this.#tails = tails
    this.#tailsSize = text.length
    return tails
  }
}
