// Task ledger on Upstash Redis in the original's RedisTaskLedgerStorage layout: row JSON at `{prefix}{id}`
// (default `mycelium:task:`), a durable tombstone copy at `{prefix without ':'}-tomb:{id}`. The lease lives at
// `{prefix without ':'}-lease:{id}`, or, under a prefix not ending in ':', under derivedBase(). `swap` is one Lua script: it compares a digest of the stored row and lease
// with the version the caller read and writes all three keys, so it is atomic without WATCH/MULTI.
import { parsePythonRow } from "../core/python-nan.ts"
import { clip } from "../core/repr.ts"
import { TaskIdAmbiguousError } from "../core/tasks/errors.ts"
import { parseTaskLease, parseTaskRow, type StoredTask, type TaskRecord } from "../core/tasks/record.ts"
import type { TaskStore } from "../core/tasks/store.ts"
import type { UpstashClient } from "./upstash.ts"
import { derivedBase, globEscape, SENT_LUA, scanKeys, sentKey, UpstashReplyError } from "./upstash-kit.ts"

export interface UpstashTaskStoreOptions {
  readonly redis: UpstashClient
  /** Row key prefix, the original's default `mycelium:task:`. */
  readonly prefix?: string
}

// The row is the primary key, else its tombstone (the original lets the primary key expire).
const READ = `
local raw = redis.call('GET', KEYS[1])
if not raw then raw = redis.call('GET', KEYS[2]) end
local lease = redis.call('GET', KEYS[3])
local function version()
  if not raw then return '' end
  return 'v' .. redis.sha1hex(raw .. '\\n' .. (lease or ''))
end
`

const GET_LUA = `${READ}
if not raw then return {'none'} end
return {version(), raw, lease or ''}
`

// KEYS[4]: this call's sent key. ARGV: expected version ('' = absent), new row, new lease ('' = none). Returns the
// new version or 'lost'. A request the client resent after its answer was lost finds its sent key and answers
// the version it wrote, instead of 'lost' (its own write read as a rival's).
const SWAP_LUA = `${READ}${SENT_LUA}
local first = was_sent(KEYS[4])
if first then return first end
if version() ~= ARGV[1] then return 'lost' end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[3] == '' then redis.call('DEL', KEYS[3]) else redis.call('SET', KEYS[3], ARGV[3]) end
local v = 'v' .. redis.sha1hex(ARGV[2] .. '\\n' .. ARGV[3])
sent(KEYS[4], v)
return v
`

/**
 * @upstash/redis parses JSON replies; accept the parsed value or the raw string. A row the original wrote holding
 * float("nan") has a bare NaN, which the client leaves as text: read it as json.loads does, not as an outage.
 */
const parsed = (v: unknown): unknown => {
  try {
    return typeof v === "string" && v !== "" ? parsePythonRow(v) : v === "" ? null : v
  } catch {
    throw new UpstashReplyError("task get", v)
  }
}

/** The version a script answers: 'v' and a SHA-1 (never a number, so the client leaves it a string). */
const isVersion = (v: unknown): v is string => typeof v === "string" && /^v[0-9a-f]{40}$/.test(v)

export class UpstashTaskStore implements TaskStore {
  readonly kind = "upstash"
  readonly #redis: UpstashClient
  readonly #prefix: string
  readonly #base: string
  readonly #lease: string
  readonly #get: (keys: string[], args: string[]) => Promise<unknown>
  readonly #swap: (keys: string[], args: string[]) => Promise<unknown>

  constructor(options: UpstashTaskStoreOptions) {
    this.#redis = options.redis
    this.#prefix = options.prefix ?? "mycelium:task:"
    // The original's `prefix.rstrip(":")`, as for action rows: with one ':' stripped, a prefix ending in '::' put the
    // tombstones where the original never looks, and missed its (a claim of a task it left in flight ran again).
    this.#base = this.#prefix.replace(/:+$/, "")
    // `{base}-lease:` lies under a prefix not ending in ':', where the original's list_all() reads every key as a task
    // row: a lease there made it raise TypeError for the whole store. Such prefixes take derivedBase()'s, never under.
    this.#lease =
      this.#base === this.#prefix && this.#prefix
        ? `${derivedBase(this.#prefix)}lease:`
        : `${this.#base}-lease:`
    const script = (src: string) => {
      const s = this.#redis.createScript(src)
      return (keys: string[], args: string[]) => s.exec(keys, args)
    }
    this.#get = script(GET_LUA)
    this.#swap = script(SWAP_LUA)
  }

  /** Under a prefix without ':' the row key of '-tomb:X' is the tombstone key of X (the original's layout). */
  #clash(id: string): RegExpMatchArray | null {
    return this.#base === this.#prefix ? id.match(/^-tomb:/) : null
  }

  #keys(id: string): string[] {
    // Keys travel as UTF-8, where an unpaired surrogate becomes U+FFFD: 'job-\ud800' and the valid 'job-\ufffd'
    // would be one key, and the second task would find the first's row. Refused before any read or write.
    if (!id.isWellFormed())
      throw new TaskIdAmbiguousError(
        `task request id '${clip(id)}' holds an unpaired surrogate, which Redis keeps as another id's key: pass valid Unicode`,
      )
    // Refused before any read or write: a write there would overwrite another task's tombstone or lease.
    const [head] = this.#clash(id) ?? []
    if (head)
      throw new TaskIdAmbiguousError(
        `task request id '${clip(id)}' would be stored at the tombstone key of task ` +
          `'${clip(id.slice(head.length))}' under the prefix '${this.#prefix}': use an id not starting with '-tomb:', ` +
          `or a prefix ending in ':'`,
      )
    return [`${this.#prefix}${id}`, `${this.#base}-tomb:${id}`, `${this.#lease}${id}`]
  }

  async get(requestId: string): Promise<StoredTask | null> {
    const reply = await this.#get(this.#keys(requestId), [])
    if (!Array.isArray(reply)) throw new UpstashReplyError("task get", reply)
    if (reply[0] === "none" && reply.length === 1) return null
    // A client given a plain `signal` answers an aborted request with a fake success: check the script's shape.
    if (!isVersion(reply[0]) || reply.length !== 3) throw new UpstashReplyError("task get", reply)
    const row = parseTaskRow(parsed(reply[1]))
    if (!row)
      throw new UpstashReplyError(`task get (row '${clip(requestId)}' is not a task ledger entry)`, reply[1])
    // Under a prefix without ':' the tombstone of X is the row key of '-tomb:X': refused, never read as its row.
    if (row.request_id !== requestId)
      throw new UpstashReplyError(
        `task get (the key of '${clip(requestId)}' holds another request id's row)`,
        reply[1],
      )
    const rawLease = parsed(reply[2])
    return { row, lease: rawLease === null ? null : parseTaskLease(rawLease), version: String(reply[0]) }
  }

  async swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    const sent = sentKey(this.#prefix)
    const reply = await this.#swap(
      [...this.#keys(requestId), sent],
      [expected ?? "", JSON.stringify(next.row), next.lease ? JSON.stringify(next.lease) : ""],
    )
    if (reply === "lost") return null
    if (!isVersion(reply)) throw new UpstashReplyError("task swap", reply)
    return reply
  }

  // By tombstone, which every write of this store and the original's leaves: a task whose row key expired (the
  // original's in-flight TTL) is still listed, and a prefix without ':' (whose tombstone keys start with it) does
  // not list a tombstone as a task.
  async *list(): AsyncIterable<StoredTask> {
    // Under a prefix ending in '::', versions before 2026-12-07 stripped one ':' only: the tasks they wrote have
    // their tombstone there alone until written again, and went unlisted (a task left in flight could not be found
    // to release). Each is read from its row key, as any other.
    const tombs = [`${this.#base}-tomb:`]
    if (this.#prefix.endsWith("::")) tombs.push(`${this.#prefix.slice(0, -1)}-tomb:`)
    // SCAN may return a key more than once (a keyspace shrinking mid-scan, as other tenants' keys are deleted): the
    // same task was listed twice, and `mycelium tasks list` counted it twice.
    const seen = new Set<string>()
    for (const tomb of tombs)
      for await (const k of scanKeys(this.#redis, `${globEscape(tomb)}*`, 500)) {
        // The tombstone of a refused id is what an older version left: never one of ours, skipped.
        const id = k.slice(tomb.length)
        if (seen.has(id)) continue
        seen.add(id)
        const t = this.#clash(id) ? null : await this.get(id)
        if (t) yield t
      }
  }
}
