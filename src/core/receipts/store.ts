// The receipt store contract and the in-process store.
import { InvalidOptionError } from "../errors.ts"
import { cloneJson, type JsonValue } from "../ledger/model/canonical.ts"
import type { ChainSealer, ChainTail } from "./chain.ts"
import type { AuditReceiptRecord, Receipt } from "./record.ts"

// Stored values are JSON: the ledger's JSON copy is several times cheaper than structuredClone.
const copy = <T>(v: T): T => cloneJson(v as JsonValue) as T

export interface ReceiptListOptions {
  /** Only receipts of this chain. */
  readonly ledger?: string | undefined
  /** Only receipts of this agent. */
  readonly agentId?: string | undefined
  /** `listPage`: at most this many receipts (a whole number >= 1). Default 100. */
  readonly limit?: number | undefined
  /** `listPage`: the `cursor` a previous page returned; the page starts after it. Opaque. */
  readonly cursor?: string | undefined
}

/** One page of receipts in append order; `cursor` resumes after it, `null` when the store has no more. */
export interface ReceiptPage {
  readonly receipts: Receipt[]
  readonly cursor: string | null
}

/**
 * Append-only. `append` is atomic per chain: the tail handed to `chain.seal` is the chain's newest link, and no
 * other append of the same chain lands between reading it and writing the new receipt (no forks by this store).
 */
export interface ReceiptStore {
  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt>
  /** Receipts in append order. */
  list(options?: ReceiptListOptions): Promise<Receipt[]>
  /**
   * One page in append order. A page scans at most `PAGE_SCAN_FACTOR` x `limit` receipts, so a filter that matches
   * little returns a short page with a cursor; concatenated pages equal `list()` with the same filters. A cursor
   * not in the stores' form (a canonical decimal) is refused (`invalid_option`).
   */
  listPage(options?: ReceiptListOptions): Promise<ReceiptPage>
}

/** A page scans at most this many receipts per receipt it may return. */
export const PAGE_SCAN_FACTOR = 20

/** The cursors stores hand out: positions or row ids, as canonical decimals. */
export const RECEIPT_CURSOR = /^(0|[1-9]\d{0,14})$/

/** Page bounds from the options: `start` is the position the cursor names (0 without one). */
export function pageBounds(options: ReceiptListOptions): { start: number; limit: number; window: number } {
  const limit = options.limit ?? 100
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new InvalidOptionError("limit must be a whole number >= 1")
  let start = 0
  if (options.cursor !== undefined) {
    // Positions are what the stores hand out: canonical decimals, so anything else was not issued by one.
    if (!RECEIPT_CURSOR.test(options.cursor))
      throw new InvalidOptionError(
        "cursor is not one a receipt page returned: pass back a page's cursor as is",
      )
    start = Number(options.cursor)
  }
  const filtered = options.agentId !== undefined || options.ledger !== undefined
  return { start, limit, window: filtered ? limit * PAGE_SCAN_FACTOR : limit }
}

/**
 * Cuts a page from `scanned` (the next `window` items after the cursor, in append order): the first `limit` that
 * match. `after(i)` is the cursor that resumes after `scanned[i]`.
 */
export function cutPage<T>(
  scanned: readonly T[],
  bounds: { readonly limit: number; readonly window: number },
  matches: (t: T) => boolean,
  after: (i: number) => string,
): { items: T[]; cursor: string | null } {
  const items: T[] = []
  for (let i = 0; i < scanned.length; i++) {
    const t = scanned[i] as T
    if (!matches(t)) continue
    items.push(t)
    if (items.length === bounds.limit) return { items, cursor: after(i) }
  }
  // A full window may have more behind it; a short one reached the end.
  const more = scanned.length > 0 && scanned.length >= bounds.window
  return { items, cursor: more ? after(scanned.length - 1) : null }
}

/** Runs async critical sections one at a time (a chain's seal is async: Web Crypto signs asynchronously). */
export class AsyncQueue {
  #tail: Promise<unknown> = Promise.resolve()
  run<T>(fn: () => Promise<T>): Promise<T> {
    // Awaited, not handed back from then(): a section that throws before its first await would be a promise already
    // rejected, which workerd reports as uncaught.
    const tail = this.#tail
    const next = (async () => {
      await tail
      return await fn()
    })()
    this.#tail = next.catch(() => undefined)
    return next
  }
}

export function matchesList(r: Receipt, options: ReceiptListOptions): boolean {
  if (options.agentId !== undefined && r.agent_id !== options.agentId) return false
  if (options.ledger !== undefined && r.chain?.ledger !== options.ledger) return false
  return true
}

/** Receipts in process memory: for tests and single-process tools. */
export class MemoryReceiptStore implements ReceiptStore {
  readonly kind = "memory"
  readonly #receipts: Receipt[] = []
  readonly #tails = new Map<string, ChainTail>()
  readonly #queue = new AsyncQueue()

  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    return this.#queue.run(async () => {
      const link = chain ? await chain.seal(this.#tails.get(chain.ledger) ?? null) : null
      const receipt: Receipt = copy(link ? { ...record, chain: link } : { ...record })
      this.#receipts.push(receipt)
      if (link) this.#tails.set(link.ledger, { seq: link.seq, digest: link.digest })
      return copy(receipt)
    })
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    return this.#receipts.filter((r) => matchesList(r, options)).map((r) => copy(r))
  }

  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const scanned = this.#receipts.slice(b.start, b.start + b.window)
    const page = cutPage(
      scanned,
      b,
      (r) => matchesList(r, options),
      (i) => String(b.start + i + 1),
    )
    return { receipts: page.items.map((r) => copy(r)), cursor: page.cursor }
  }
}
