// Audit receipts on Upstash Redis. The original has no Redis receipt store, so the layout is ours: a list
// `{prefix}log` of receipt JSON in append order and `{prefix}tail:{ledger}` per chain. An append is one Lua
// script that pushes only if the chain's tail is still the one the receipt was sealed against. Receipts are written
// with Python's number forms (JSON.stringify would turn -0.0 into 0 and break the signature).
import { pythonDumps } from "../core/python-json.ts"
import type { ChainSealer, ChainTail } from "../core/receipts/chain.ts"
import { AuditReceiptError, chainQueue, ReceiptStoreContendedError } from "../core/receipts/errors.ts"
import type { AuditReceiptRecord, Receipt } from "../core/receipts/record.ts"
import {
  cutPage,
  matchesList,
  pageBounds,
  type ReceiptListOptions,
  type ReceiptPage,
  type ReceiptStore,
} from "../core/receipts/store.ts"
import { readStoredReceipt } from "../core/receipts/stored.ts"
import { SENT_LUA, sentKey, UpstashReplyError } from "./upstash-kit.ts"

/** The calls the receipt store makes: an `@upstash/redis` `Redis` is one (spelled out, as `UpstashClient`). */
export interface UpstashReceiptClient {
  createScript(script: string): { exec(keys: string[], args: string[]): Promise<unknown> }
  get(key: string): Promise<unknown>
  lrange(key: string, start: number, end: number): Promise<unknown>
}

export interface UpstashReceiptStoreOptions {
  /** An `@upstash/redis` client. */
  readonly redis: UpstashReceiptClient
  /** Key prefix. Default `mycelium:receipts:`. */
  readonly prefix?: string
}

// KEYS: log, tail ('' when unchained), this call's sent key. ARGV: expected tail digest ('' = none), receipt JSON,
// new tail JSON. A request the client resent after its answer was lost finds its sent key: 'ok', never a second copy.
const APPEND_LUA = `${SENT_LUA}
if was_sent(KEYS[3]) then return 'ok' end
if KEYS[2] ~= '' then
  local raw = redis.call('GET', KEYS[2])
  local digest = ''
  if raw then digest = cjson.decode(raw).digest end
  if digest ~= ARGV[1] then return 'moved' end
  redis.call('SET', KEYS[2], ARGV[3])
end
redis.call('RPUSH', KEYS[1], ARGV[2])
sent(KEYS[3], '1')
return 'ok'
`

const APPEND_ROUNDS = 50

export class UpstashReceiptStore implements ReceiptStore {
  readonly kind = "upstash"
  readonly #redis: UpstashReceiptClient
  readonly #prefix: string
  readonly #append: (keys: string[], args: string[]) => Promise<unknown>
  readonly #queue = chainQueue()

  constructor(options: UpstashReceiptStoreOptions) {
    this.#redis = options.redis
    this.#prefix = options.prefix ?? "mycelium:receipts:"
    const s = this.#redis.createScript(APPEND_LUA)
    this.#append = (keys, args) => s.exec(keys, args)
  }

  async append(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    if (!chain) return await this.#tryAppend(record)
    // Keys travel as UTF-8, where an unpaired surrogate is U+FFFD: the tail key is another chain's, and that chain's
    // next receipt would read as a gap.
    if (!chain.ledger.isWellFormed())
      throw new AuditReceiptError(
        `chain '${chain.ledger}' holds an unpaired surrogate: name it in valid Unicode`,
      )
    return await this.#queue(chain.ledger, () => this.#tryAppend(record, chain))
  }

  async #tryAppend(record: AuditReceiptRecord, chain?: ChainSealer): Promise<Receipt> {
    const log = `${this.#prefix}log`
    for (let round = 0; round < APPEND_ROUNDS; round++) {
      const tailKey = chain ? `${this.#prefix}tail:${chain.ledger}` : ""
      const raw = chain ? await this.#redis.get(tailKey) : null
      const tail = chainTail(tailKey, raw)
      const link = chain ? await chain.seal(tail) : null
      const receipt: Receipt = link ? { ...record, chain: link } : { ...record }
      const reply = await this.#append(
        [log, tailKey, sentKey(this.#prefix)],
        [
          tail?.digest ?? "",
          pythonDumps(receipt),
          link ? JSON.stringify({ seq: link.seq, digest: link.digest }) : "",
        ],
      )
      if (reply === "ok") return receipt
      if (reply !== "moved") throw new UpstashReplyError("receipt append", reply)
    }
    throw new ReceiptStoreContendedError(record.receipt_id, chain?.ledger ?? "", APPEND_ROUNDS)
  }

  async list(options: ReceiptListOptions = {}): Promise<Receipt[]> {
    const items = logItems(await this.#redis.lrange(`${this.#prefix}log`, 0, -1))
    return items.map((v, i) => this.#receipt(v, i)).filter((r) => matchesList(r, options))
  }

  /** Cursors are list indexes (the log is append-only): one LRANGE over the page's window. */
  async listPage(options: ReceiptListOptions = {}): Promise<ReceiptPage> {
    const b = pageBounds(options)
    const items = logItems(await this.#redis.lrange(`${this.#prefix}log`, b.start, b.start + b.window - 1))
    const page = cutPage(
      items.map((v, i) => this.#receipt(v, b.start + i)),
      b,
      (r) => matchesList(r, options),
      (i) => String(b.start + i + 1),
    )
    return { receipts: page.items, cursor: page.cursor }
  }

  // Its list index names it (LINDEX), for the repair the error asks for.
  #receipt(v: unknown, index: number): Receipt {
    return readStoredReceipt(v, `${this.#prefix}log item ${index}`) as Receipt
  }
}

// A client given a plain `signal` answers an aborted request with a fake success holding the abort reason: a reply
// that is not what the command returns is an outage, never an empty log or a chain without a tail.
function logItems(items: unknown): unknown[] {
  if (!Array.isArray(items)) throw new UpstashReplyError("receipt list", items)
  return items
}

// A tail that is not one may be a damaged key or a client's fake answer (see logItems): they look alike, so it is
// an unexpected reply, naming the key to look at.
function chainTail(key: string, raw: unknown): ChainTail | null {
  let tail: unknown = raw
  try {
    if (typeof raw === "string") tail = JSON.parse(raw)
  } catch {
    // Reported below with the reply.
  }
  if (tail === null) return null
  const t = tail as Partial<ChainTail> | undefined
  if (typeof t?.digest !== "string" || typeof t.seq !== "number")
    throw new UpstashReplyError(
      `the read of chain tail ${key} (if Redis holds this, set it to the chain's last link's {seq, digest})`,
      raw,
    )
  return t as ChainTail
}
