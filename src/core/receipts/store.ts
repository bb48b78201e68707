// The receipt store contract and the in-process store.
import { cloneJson, type JsonValue } from "../ledger/model/canonical.ts"
import type { ChainSealer, ChainTail } from "./chain.ts"
import type { AuditReceiptRecord, Receipt } from "./record.ts"

// Stored values are JSON: the ledger's JSON copy is several times cheaper than structuredClone.
const copy = <T>(v: T): T => cloneJson(v as JsonValue) as T

export interface ReceiptListOptions {
  /** Only receipts of this chain. */
  readonly ledger?: string
  /** Only receipts of this agent. */
  readonly agentId?: string
}

/**
 * Append-only. `append` is atomic per chain: the tail handed to `chain.seal` is the chain's newest link, and no
 * other append of the same chain lands between reading it and writing the new receipt (no forks by this store).
 */
export interface ReceiptStore {
  append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt>
  /** Receipts in append order. */
  list(options?: ReceiptListOptions): Promise<Receipt[]>
}

/** Runs async critical sections one at a time (a chain's seal is async: Web Crypto signs asynchronously). */
export class AsyncQueue {
  #tail: Promise<unknown> = Promise.resolve()
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(fn)
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
}
