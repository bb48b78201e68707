// The Upstash family's shared pieces, package-internal (not an entry): what the ledger, task and receipt stores
// share of their keys, scripts and replies. The ledger's entry re-exports UpstashReplyError, the class users catch.
import { MyceliumError } from "../core/errors.ts"
import { clip } from "../core/repr.ts"

/** The one call scanKeys makes, as UpstashClient declares it (its own type here: the kit imports nothing of upstash.ts). */
interface ScanClient {
  scan(cursor: string | number, options: { match: string; count: number }): Promise<unknown>
}

const SCAN_COUNT = 1000

/**
 * The resend marks every Upstash write script shares (ledger, tasks, receipts). The client resends a request whose
 * answer was lost (a reset after the write). Each write call carries its own key (`sentKey`): a resent one finds it
 * and answers what the first run did, instead of judging its own write a rival's. '' for the empty prefix, where
 * any key would lie among the rows.
 */
export const SENT_LUA = `
local function sent(key,value) if key~='' then redis.call('SET',key,value,'EX',300) end end
local function was_sent(key) return key~='' and redis.call('GET',key) end
`

/** The script answered something it never returns: a protocol or version mismatch, never a ledger decision. */
export class UpstashReplyError extends MyceliumError {
  override readonly name = "UpstashReplyError"
  override readonly code = "upstash_unexpected_reply"
  constructor(op: string, reply: unknown) {
    super(`unexpected reply from Redis during ${op}: ${clip(String(JSON.stringify(reply)))}`)
  }
}

/**
 * A fresh key for one write call, outside the row prefix (see `sent` in the Lua prelude): ours alone, so a script
 * that finds it set knows this very call already ran. '' (not marked) for the empty prefix, which every key is under.
 */
export function sentKey(prefix: string): string {
  const base = derivedBase(prefix)
  return base === null ? "" : `${base}sent:${crypto.randomUUID()}`
}

/**
 * Keys matching `match`, every page. A page that is not `[cursor, keys]` is an outage, never "no more keys" nor
 * a cursor to follow: a fake answer to an aborted request would otherwise loop forever.
 */
export async function* scanKeys(redis: ScanClient, match: string, count = SCAN_COUNT): AsyncIterable<string> {
  let cursor = "0"
  do {
    const page: unknown = await redis.scan(cursor, { match, count })
    const [next, keys] = Array.isArray(page) ? page : []
    if (!/^\d+$/.test(String(next)) || !Array.isArray(keys)) throw new UpstashReplyError("scan", page)
    for (const k of keys) yield String(k)
    cursor = String(next)
  } while (cursor !== "0")
}

/**
 * The start of every derived key, never under the prefix (a scan of `{prefix}*` sees rows only). For a prefix
 * ending in ':' (the default `mycelium:action:`) it is the Python original's own layout, the ':' replaced
 * (`mycelium:action-tomb:`). Any other prefix keeps its last character between two markers (`tenant-a` ->
 * `tenant-~a~`, `t~` -> `t!~!`): one base per prefix, and never one of the first kind (which end in '-'). A trailing
 * '-' gave `X~a:` and `Xa` one set of tombstones; replacing the last character gave one to `t-a` and `t-b`.
 * Null for the empty prefix, which every key lies under.
 */
export function derivedBase(prefix: string): string | null {
  if (prefix === "") return null
  const last = prefix.slice(-1)
  const m = last === "~" ? "!" : "~"
  return prefix.slice(0, -1) + (last === ":" ? "-" : m + last + m)
}

export function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, "\\$&")
}
