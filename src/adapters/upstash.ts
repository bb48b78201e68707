// Ledger on Upstash Redis (REST), laid out as the Python original's RedisLedgerStorage so both can share one
// ledger: row JSON at `{prefix}{id}`, a durable tombstone copy at `{prefix without ':'}-tomb:{id}`.
// Derived keys (our tombstones, the dispatch index) never lie under the row prefix, whatever it is: a scan of
// `{prefix}*` (ours, or a Python worker's) sees rows only. The tombstone copy where the original looks is a row
// too, under a prefix without ':'. See derivedBase() and docs/storage-contract.md.
// Claim and every compare-and-set are one Lua script each: one round trip, no WATCH/MULTI retry loops.

import {
  type ClaimOptions,
  type ClaimResult,
  decideClaim,
  dispatchIdOf,
  entryFromRow,
  entryToRow,
  isTerminalOutcome,
  keepablePayload,
  type LedgerEntry,
  LedgerRowError,
  LedgerStaleFenceError,
  type LedgerStorage,
  type ListOptions,
  refuseUnkeepableClaim,
  type StorageLimits,
  stampClaim,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { MyceliumError } from "../core/errors.ts"
import { parsePythonRow } from "../core/python-nan.ts"
import { listsNothing, pairHeadOptions, startingWith } from "../core/storage/text.ts"

/**
 * The calls the Upstash stores make. An `@upstash/redis` `Redis` (`@upstash/redis`, `/cloudflare` or `/fastly`) is
 * one; spelled out here so that these declarations need no `@upstash/redis` (the plain Redis store, which extends
 * this one, installs none).
 */
export interface UpstashClient {
  createScript(script: string): { exec(keys: string[], args: string[]): Promise<unknown> }
  mget(...keys: string[]): Promise<unknown>
  scan(cursor: string | number, options: { match: string; count: number }): Promise<unknown>
}

export interface UpstashLedgerStorageOptions {
  /** An `@upstash/redis` client (`@upstash/redis`, `/cloudflare` or `/fastly`). */
  readonly redis: UpstashClient
  /** Row key prefix, the original's default `mycelium:action:`. Tombstones and the dispatch index derive from it. */
  readonly prefix?: string
  /**
   * Seconds an in-flight row's primary key lives after its last write (the original's `in_flight_ttl`, default
   * 7 days; never less than 4× the lease). Terminal rows and unbounded leases are kept without a TTL. 0 disables.
   */
  readonly inFlightTtl?: number
  /** Clock in epoch seconds, used only to age a row rebuilt from its tombstone on `get`/`list`. */
  readonly now?: () => number
  /**
   * How the args-drift check finds the rows claimed under one tool-call id. `index` (default): this adapter's
   * dispatch sets, one round trip, but they hold only rows TypeScript workers claimed. `scan`: every row under the
   * prefix, as the original looks, so rows a Python worker claimed count too; a fresh call with a tool-call id then
   * costs a scan of the ledger (the original's own cost). Use `scan` when Python workers share this Redis.
   */
  readonly dispatchLookup?: DispatchLookup
}

/** See {@link UpstashLedgerStorageOptions.dispatchLookup}. */
export type DispatchLookup = "index" | "scan"

type Row = Record<string, unknown>

/**
 * The resend marks every Upstash write script shares (ledger, tasks, receipts). The client resends a request whose
 * answer was lost (a reset after the write). Each write call carries its own key (`sentKey`): a resent one finds it
 * and answers what the first run did, instead of judging its own write a rival's. '' for the empty prefix, where
 * any key would lie among the rows.
 */
export const SENT_LUA = `
local function sent(key, value) if key ~= '' then redis.call('SET', key, value, 'EX', 300) end end
local function was_sent(key) return key ~= '' and redis.call('GET', key) end
`

// Comments stay out of the Lua text, which ships in every bundle as written.
// load(): the stored row of request id: the primary key, else the tombstone (the key was evicted). A non-terminal
// tombstone stands for an abandoned claim: its lease counts as lapsed, as in the original. legacy: where an older
// version or a Python worker with this prefix put the tombstone ('' when the same). With a prefix not ending in ':'
// (or empty) the original's tombstone of X is the row key of '-tomb:X': a row of another id is no tombstone of this
// one, and under the primary key it is refused. The primary key's TTL: only while in flight with a bounded lease;
// never shortened by a write. write(): KEYS are row, tomb, legacy. The legacy copy is what a Python worker reads
// once the primary key expired, so it is written too, unless it holds another request's row ('-tomb:X's).
// Shared Lua: reads a stored row exactly as `entryFromRow` + `resolvedOutcome` in src/core/ledger/model/entry.ts do, so
// the script classifies the same way `classifyClaim` does. Missing `terminal_outcome` reads as IN_FLIGHT, a JSON null
// or unknown value falls back to `status`, unparseable numbers behave like JavaScript's NaN (never equal, never
// greater).
const LUA_PRELUDE = `
local NULL = cjson.null
local VALID = {IN_FLIGHT=true, COMPLETED=true, FAILED_BEFORE_EFFECT=true, FAILED_AFTER_EFFECT=true,
  EXPIRED=true, BLOCKED=true, UNKNOWN=true}
local NAN = 0/0
local function num(v)
  if v == nil or v == NULL or v == '' then return nil end
  if type(v) == 'boolean' then if v then return 1 else return 0 end end
  if type(v) == 'number' then return v end
  if type(v) == 'string' then return tonumber(v) or NAN end
  return NAN
end
local function fence_of(row)
  local f = num(row.fence)
  if f == nil or f ~= f then return 0 end
  return f
end
local function term_of(row)
  local t = row.terminal_outcome
  if t == nil then return 'IN_FLIGHT' end
  return t
end
local function valid_term(t) return type(t) == 'string' and VALID[t] == true end
local function non_terminal(row)
  local t = term_of(row)
  if valid_term(t) then return t == 'IN_FLIGHT' or t == 'EXPIRED' end
  return row.status == 'in-flight'
end
local function decode(raw)
  local ok, row = pcall(cjson.decode, raw)
  if not ok or type(row) ~= 'table' or type(row.request_id) ~= 'string' or type(row.tool) ~= 'string'
    or type(row.status) ~= 'string' then
    return nil
  end
  return row
end
local function load(key, tomb, legacy, id)
  local raw = redis.call('GET', key)
  if raw then
    local row = decode(raw)
    if row == nil then return error('mycelium: corrupt ledger row at ' .. key) end
    if row.request_id ~= id then
      return error('mycelium: ' .. key .. " holds another request id's row")
    end
    return row, raw, false
  end
  for _, k in ipairs({tomb, legacy}) do
    raw = k ~= '' and redis.call('GET', k)
    if raw then
      local row = decode(raw)
      if row == nil then return error('mycelium: corrupt ledger row at ' .. k) end
      if row.request_id == id then return row, raw, non_terminal(row) end
    end
  end
  return nil, nil, false
end
local function lease_of(row, ghost)
  if ghost then return -math.huge end
  return num(row.lease_until)
end
local function resolved(row, now, ghost)
  local t = term_of(row)
  local lease = lease_of(row, ghost)
  local lapsed = lease ~= nil and now >= lease
  if not valid_term(t) then
    local s = row.status
    if s == 'completed' then t = 'COMPLETED'
    elseif s == 'failed' then t = 'FAILED_BEFORE_EFFECT'
    elseif s == 'in-flight' then t = 'IN_FLIGHT'
    else t = 'UNKNOWN' end
  end
  if t == 'IN_FLIGHT' and lapsed then return 'EXPIRED' end
  return t
end
local function write(raw, ttl, id)
  local key, l = KEYS[1], KEYS[3]
  if ttl > 0 then
    local cur = redis.call('TTL', key)
    if cur > ttl then ttl = cur end
    redis.call('SET', key, raw, 'EX', ttl)
  else
    redis.call('SET', key, raw)
  end
  redis.call('SET', KEYS[2], raw)
  local v = l ~= '' and redis.call('GET', l)
  if l ~= '' and (not v or (decode(v) or {}).request_id == id) then redis.call('SET', l, raw) end
end
${SENT_LUA}`

// KEYS: row, tomb, legacy tomb or '', dispatch index of the new row or '', dispatch set to read siblings from or '',
// this call's sent key. ARGV: row head, row tail (the new row is head .. fence .. tail), now, mode (any|none|fence),
// reclaim fence, ttl, request id, row prefix, tomb prefix. A claim returns {'claimed', fence, 0, sibling id, row,
// tomb, …}. Siblings are read in the same atomic step as the insert: of two racing claims under one dispatch id, the
// later script always sees the earlier one.
const CLAIM_LUA = `${LUA_PRELUDE}
local function claim()
local now = tonumber(ARGV[3])
local row, raw, ghost = load(KEYS[1], KEYS[2], KEYS[3], ARGV[7])
local fence = 0
if row ~= nil then
  local t = resolved(row, now, ghost)
  local cls = 'in_flight'
  if t == 'COMPLETED' then cls = 'completed'
  elseif t == 'EXPIRED' or t == 'FAILED_BEFORE_EFFECT' or t == 'FAILED_AFTER_EFFECT' then cls = 'claimed' end
  fence = fence_of(row)
  if cls == 'claimed' and (ARGV[4] == 'none' or (ARGV[4] == 'fence' and fence ~= tonumber(ARGV[5]))) then
    cls = 'in_flight'
  end
  if cls ~= 'claimed' then
    if ghost then return {cls, raw, 1} end
    return {cls, raw, 0}
  end
end
local nf = string.format('%d', fence + 1)
write(ARGV[1] .. nf .. ARGV[2], tonumber(ARGV[6]), ARGV[7])
if KEYS[4] ~= '' then redis.call('SADD', KEYS[4], ARGV[7]) end
sent(KEYS[6], nf)
return nf
end
local nf = was_sent(KEYS[6]) or claim()
if type(nf) == 'table' then return nf end
local out = {'claimed', nf, 0}
if KEYS[5] ~= '' then
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[5])) do
    if id ~= ARGV[7] then
      out[#out + 1] = id
      out[#out + 1] = redis.call('GET', ARGV[8] .. id) or ''
      out[#out + 1] = redis.call('GET', ARGV[9] .. id) or ''
    end
  end
end
return out
`

// KEYS: row, tomb, legacy tomb or '', dispatch or '', this call's sent key. ARGV: new row, ttl, request id, outcomes
// (comma-separated), owner flag, owner, fence, phase flag, phase, lease flag, lease-held-at, boundary flag, boundary.
const CAS_LUA = `${LUA_PRELUDE}
if was_sent(KEYS[5]) then return 1 end
local row, raw, ghost = load(KEYS[1], KEYS[2], KEYS[3], ARGV[3])
if row == nil then return 0 end
local t = term_of(row)
if type(t) ~= 'string' then return 0 end
local hit = false
for o in string.gmatch(ARGV[4], '[^,]+') do if o == t then hit = true end end
if not hit then return 0 end
if ARGV[5] == '1' then
  local o = row.owner
  if o == nil or o == NULL or tostring(o) ~= ARGV[6] then return 0 end
end
if fence_of(row) ~= tonumber(ARGV[7]) then return 0 end
if ARGV[8] == '1' then
  local p = row.effect_phase
  if p == nil or p == NULL then p = 'INTENDED' end
  if p ~= ARGV[9] then return 0 end
end
if ARGV[10] == '1' then
  local lease = lease_of(row, ghost)
  if lease ~= nil and not (lease > tonumber(ARGV[11])) then return 0 end
end
if ARGV[12] == '1' then
  local b = row.side_effect_boundary
  if b == nil or b == NULL then b = 'not_crossed' end
  if b ~= ARGV[13] then return 0 end
end
write(ARGV[1], tonumber(ARGV[2]), ARGV[3])
if KEYS[4] ~= '' then redis.call('SADD', KEYS[4], ARGV[3]) end
sent(KEYS[5], '1')
return 1
`

// KEYS: row, tomb, legacy tomb or '', dispatch or ''. ARGV: new row, ttl, request id, incoming fence.
// Returns -1 or the newer stored fence. A resent set writes the same row again: no sent key needed.
const SET_LUA = `${LUA_PRELUDE}
local stored = -1
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[3]}) do
  local raw = k ~= '' and redis.call('GET', k)
  if raw then
    local row = decode(raw)
    if row ~= nil and row.request_id == ARGV[3] and fence_of(row) > stored then stored = fence_of(row) end
  end
end
if stored > tonumber(ARGV[4]) then return stored end
write(ARGV[1], tonumber(ARGV[2]), ARGV[3])
if KEYS[4] ~= '' then redis.call('SADD', KEYS[4], ARGV[3]) end
return -1
`

// KEYS: dispatch set. ARGV: row prefix, tomb prefix. Returns id, row, tomb triples ('' when absent).
const BY_DISPATCH_LUA = `
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = id
  out[#out + 1] = redis.call('GET', ARGV[1] .. id) or ''
  out[#out + 1] = redis.call('GET', ARGV[2] .. id) or ''
end
return out
`

const DEFAULT_PREFIX = "mycelium:action:"
const DEFAULT_IN_FLIGHT_TTL = 604_800
const SCAN_COUNT = 1000
const MGET_BATCH = 200

type ScriptRunner = (keys: string[], args: string[]) => Promise<unknown>

// The claim script decodes the stored row with Lua's cjson, which refuses an unpaired surrogate's escape and nesting
// past 1,000 levels: such a row, once written, made every later claim of its id fail as if Redis were down.
const REDIS_LIMITS: StorageLimits = Object.freeze({ validUnicodeOnly: true, maxDepth: 900 })

/** The Redis ledger backend over the Upstash REST API. Works from any runtime with `fetch`. */
export class UpstashLedgerStorage implements LedgerStorage {
  readonly kind = "upstash"
  /** What the claim script's JSON decoder reads: valid Unicode without U+0000, nested at most 900 deep. */
  readonly limits: StorageLimits = REDIS_LIMITS
  readonly #redis: UpstashClient
  readonly #prefix: string
  readonly #tombPrefix: string
  /** Where the original looks for tombstones, when that differs: read, and written where it holds no other row. */
  readonly #legacyTombPrefix: string | null
  /** Null for the empty prefix: every key lies under it, so there is no index and siblings come from a scan. */
  readonly #dispatchPrefix: string | null
  /** Siblings come from a scan of the rows (no index, or `dispatchLookup: "scan"`); the index is still written. */
  readonly #scanDispatch: boolean
  readonly #inFlightTtl: number
  readonly #now: () => number
  readonly #claim: ScriptRunner
  readonly #cas: ScriptRunner
  readonly #set: ScriptRunner
  readonly #byDispatch: ScriptRunner

  constructor(options: UpstashLedgerStorageOptions) {
    this.#redis = options.redis
    this.#prefix = options.prefix ?? DEFAULT_PREFIX
    // The original's `prefix.rstrip(":")`: every trailing ':' goes.
    const pythonTomb = `${this.#prefix.replace(/:+$/, "")}-tomb:`
    const base = derivedBase(this.#prefix)
    this.#tombPrefix = base === null ? pythonTomb : `${base}tomb:`
    this.#legacyTombPrefix = this.#tombPrefix === pythonTomb ? null : pythonTomb
    this.#dispatchPrefix = base === null ? null : `${base}dispatch:`
    this.#scanDispatch = base === null || options.dispatchLookup === "scan"
    this.#inFlightTtl = options.inFlightTtl ?? DEFAULT_IN_FLIGHT_TTL
    this.#now = options.now ?? (() => Date.now() / 1000)
    const script = (src: string): ScriptRunner => {
      // EVALSHA first, EVAL only when the server has not cached the script yet (NOSCRIPT).
      const s = this.#redis.createScript(src)
      return (keys, args) => s.exec(keys, args)
    }
    this.#claim = script(CLAIM_LUA)
    this.#cas = script(CAS_LUA)
    this.#set = script(SET_LUA)
    this.#byDispatch = script(BY_DISPATCH_LUA)
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    // Keys travel as UTF-8, where an unpaired surrogate is U+FFFD: the key is another id's. No row has such an id
    // (every write refuses it, and the original cannot encode it), so none is read.
    if (!requestId.isWellFormed()) return null
    const legacy = this.#legacyTomb(requestId)
    const keys = [this.#key(requestId), this.#tomb(requestId)]
    if (legacy) keys.push(legacy)
    const [raw, ...tombs] = await this.#mget(keys)
    return this.#fromStored(raw, tombs, this.#now(), requestId)
  }

  /** Upsert, refusing only a write that would move the fence backwards (a stale writer). */
  async set(entry: LedgerEntry): Promise<void> {
    const stored = await this.#set(this.#keys(entry), [
      keepablePayload(entry),
      String(this.#ttlFor(entry)),
      entry.requestId,
      String(entry.fence),
    ])
    if (!Number.isSafeInteger(stored) || (stored as number) < -1) throw new UpstashReplyError("set", stored)
    if ((stored as number) >= 0) {
      throw new LedgerStaleFenceError(entry.requestId, Number(stored), entry.fence)
    }
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    refuseUnkeepableClaim(entry, this.limits)
    const stamped = stampClaim(entry, null, leaseTtl, now)
    const [head, tail] = splitAtFence(stamped)
    let mode = "any"
    let reclaimFence = ""
    if (options && "reclaimFence" in options) {
      mode = options.reclaimFence === null ? "none" : "fence"
      reclaimFence = options.reclaimFence === null ? "" : String(options.reclaimFence)
    }
    const ttl = leaseTtl > 0 ? this.#ttl(leaseTtl) : 0
    const indexKey = dispatchIdOf(entry)
    const siblingsOf = options?.dispatchId
    const reply = await this.#claim(
      [
        this.#key(entry.requestId),
        this.#tomb(entry.requestId),
        this.#legacyTomb(entry.requestId) ?? "",
        indexKey && this.#dispatchPrefix ? this.#dispatchPrefix + indexKey : "",
        siblingsOf && !this.#scanDispatch ? this.#dispatchPrefix + siblingsOf : "",
        sentKey(this.#prefix),
      ],
      [
        head,
        tail,
        String(now),
        mode,
        reclaimFence,
        String(ttl),
        entry.requestId,
        this.#prefix,
        this.#tombPrefix,
      ],
    )
    // A client given a plain `signal` answers an aborted request with a fake success holding the abort reason:
    // every reply is checked for the shape its script returns, so that (or a broken endpoint) is an outage.
    if (!Array.isArray(reply) || reply.length < 3 || (reply.length - 3) % 3 !== 0 || !isFlag(reply[2]))
      throw new UpstashReplyError("claim", reply)
    const [outcome, value, ghost] = reply as [unknown, unknown, unknown]
    if (outcome === "claimed") {
      const fence = Number(value)
      if (!Number.isSafeInteger(fence) || fence < 1 || typeof value === "boolean")
        throw new UpstashReplyError("claim", reply)
      const claimed = { ...stamped, fence }
      // Without siblings the ledger asks findByDispatchId after this insert: still one of two racers sees the other.
      if (!siblingsOf || this.#scanDispatch) return { outcome, entry: claimed }
      return { outcome, entry: claimed, dispatchSiblings: this.#triples(reply.slice(3), siblingsOf, now) }
    }
    if (outcome !== "completed" && outcome !== "in_flight") throw new UpstashReplyError("claim", reply)
    const existing = toRow(value)
    if (!existing) throw new UpstashReplyError("claim", reply)
    const stored = entryFromRow(Number(ghost) === 1 ? ghostRow(existing, now) : existing)
    // The script and `classifyClaim` must agree; if they ever do not, refuse rather than act on a wrong answer.
    const check = decideClaim(stored, entry, leaseTtl, now, options).result.outcome
    if (check !== outcome) throw new UpstashReplyError("claim (classification mismatch)", reply)
    return { outcome, entry: stored }
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    const reply = await this.#cas(
      [...this.#keys(next), sentKey(this.#prefix)],
      [
        keepablePayload(next),
        String(this.#ttlFor(next)),
        next.requestId,
        expect.outcomes.join(","),
        ...flagged(expect.owner ?? undefined),
        String(expect.fence),
        ...flagged(expect.effectPhase),
        ...flagged(expect.leaseHeldAt),
        ...flagged(expect.sideEffectBoundary),
      ],
    )
    // Never `false` for an answer that is not the script's: the ledger would read a lost race into it.
    if (!isFlag(reply)) throw new UpstashReplyError("compare-and-set", reply)
    return Number(reply) === 1
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    const head = pairHeadOptions(options)
    if (head) return yield* startingWith(this.list(head), options)
    // A SCAN pattern is UTF-8 too: an unpaired surrogate matched the U+FFFD prefix's keys.
    if (listsNothing(options)) return
    const userPrefix = options.prefix ?? ""
    const ids = new Set<string>()
    // Tombstones cover rows whose primary key was evicted; primary keys cover rows written without a tombstone.
    // A key under the row prefix may be no row of ours (an older or a Python tombstone, another app's key with
    // the empty prefix): #fromStored keeps only rows whose request id is the key's.
    for (const base of [this.#prefix, this.#tombPrefix]) {
      for await (const key of scanKeys(this.#redis, `${globEscape(base + userPrefix)}*`))
        ids.add(key.slice(base.length))
    }
    let sorted = [...ids].sort()
    if (options.cursor !== undefined) {
      const c = options.cursor
      sorted = sorted.filter((id) => id > c)
    }
    // The limit counts rows, not keys: under a prefix without ':' every row's tombstone copy for the original lies
    // under the row prefix too (its id '-tomb:X' sorts first), and cutting the ids gave short or empty pages.
    let left = options.limit === undefined ? Infinity : Math.max(0, options.limit)
    for (let i = 0; i < sorted.length && left > 0; i += MGET_BATCH) {
      const batch = sorted.slice(i, i + MGET_BATCH)
      const keys = batch.flatMap((id) => [this.#key(id), this.#tomb(id)])
      const values = await this.#mget(keys)
      const now = this.#now()
      for (let j = 0; j < batch.length && left > 0; j++) {
        const e = this.#fromStored(values[2 * j], [values[2 * j + 1]], now, batch[j] as string, true)
        if (e) {
          left--
          yield e
        }
      }
    }
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    if (!dispatchId.isWellFormed()) return []
    // Also the empty prefix's case: it has no index, so #scanDispatch is set for it.
    if (this.#scanDispatch) {
      const out: LedgerEntry[] = []
      for await (const e of this.list()) if (dispatchIdOf(e) === dispatchId) out.push(e)
      return out
    }
    const reply = await this.#byDispatch(
      [this.#dispatchPrefix + dispatchId],
      [this.#prefix, this.#tombPrefix],
    )
    if (!Array.isArray(reply) || reply.length % 3 !== 0)
      throw new UpstashReplyError("findByDispatchId", reply)
    return this.#triples(reply, dispatchId, this.#now())
  }

  /** Rows from (id, row, tomb) triples of a dispatch set, sorted by request id. */
  #triples(flat: unknown[], dispatchId: string, now: number): LedgerEntry[] {
    const out: LedgerEntry[] = []
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const e = this.#fromStored(flat[i + 1], [flat[i + 2]], now, String(flat[i]))
      // The set only grows; a row whose dispatch id changed since is filtered here.
      if (e && dispatchIdOf(e) === dispatchId) out.push(e)
    }
    return out.sort((a, b) => (a.requestId < b.requestId ? -1 : a.requestId > b.requestId ? 1 : 0))
  }

  async #mget(keys: string[]): Promise<unknown[]> {
    const values: unknown = await this.#redis.mget(...keys)
    if (!Array.isArray(values) || values.length !== keys.length) throw new UpstashReplyError("get", values)
    return values
  }

  #key(id: string): string {
    return this.#prefix + id
  }

  #tomb(id: string): string {
    return this.#tombPrefix + id
  }

  #legacyTomb(id: string): string | null {
    return this.#legacyTombPrefix === null ? null : this.#legacyTombPrefix + id
  }

  #keys(entry: LedgerEntry): string[] {
    const keys = [
      this.#key(entry.requestId),
      this.#tomb(entry.requestId),
      this.#legacyTomb(entry.requestId) ?? "",
    ]
    const d = dispatchIdOf(entry)
    keys.push(d && this.#dispatchPrefix ? this.#dispatchPrefix + d : "")
    return keys
  }

  #ttl(leaseSeconds: number): number {
    if (this.#inFlightTtl <= 0) return 0
    // Rounded up: `EX` takes whole seconds only (86400.5 failed every claim), and the key must outlive the lease (the
    // original's int() truncation could end it up to a second early).
    return Math.ceil(Math.max(this.#inFlightTtl, 4 * leaseSeconds))
  }

  /** Keep the in-flight TTL on every write of a live row (the original dropped it after the first CAS). */
  #ttlFor(entry: LedgerEntry): number {
    if (entry.terminalOutcome !== "IN_FLIGHT" || entry.leaseUntil === null) return 0
    const since = entry.lastHeartbeatAt ?? entry.startedAt
    return this.#ttl(Math.max(0, entry.leaseUntil - since))
  }

  /**
   * The row of `id` from its primary key, else the first of its tombstones that is its own: with a prefix not ending
   * in ':' (or empty) the original's tombstone of X is the row key of `-tomb:X`, so a row of another id is no
   * tombstone, and under the primary key it is refused (the script refuses the same). `listed`: `id` came from a
   * scanned key, which may be no row of ours: values that are not its row are skipped.
   */
  #fromStored(raw: unknown, tombs: unknown[], now: number, id: string, listed = false): LedgerEntry | null {
    const read = listed ? toRowOrNull : toRow
    // The row of `id`; outside a scan also a value that is no row at all, which entryFromRow refuses.
    const mine = (r: Row | null): r is Row =>
      r !== null && (r.request_id === id || (!listed && typeof r.request_id !== "string"))
    const row = read(raw)
    if (mine(row)) return entryFromRow(row)
    if (row && !listed)
      throw new LedgerRowError(
        `the key of '${id}' holds the row of another request id; use a prefix ending in ':' (docs/storage-contract.md)`,
      )
    for (const v of tombs) {
      const t = read(v)
      if (mine(t)) return entryFromRow(isNonTerminal(t) ? ghostRow(t, now) : t)
    }
    return null
  }
}

/** The script answered something it never returns: a protocol or version mismatch, never a ledger decision. */
export class UpstashReplyError extends MyceliumError {
  override readonly name = "UpstashReplyError"
  override readonly code = "upstash_unexpected_reply"
  constructor(op: string, reply: unknown) {
    super(
      `unexpected reply from the Redis ledger script during ${op}: ${JSON.stringify(reply)?.slice(0, 200)}`,
    )
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

/** An optional expectation as the CAS script reads it: a "1"/"0" flag, then the value ('' when absent). */
const flagged = (v: string | number | undefined): [string, string] =>
  v === undefined ? ["0", ""] : ["1", String(v)]

/** A script's 0/1 answer: Redis integers arrive as JSON numbers whatever the client's options. */
const isFlag = (v: unknown): boolean => v === 0 || v === 1

/**
 * Keys matching `match`, every page. A page that is not `[cursor, keys]` is an outage, never "no more keys" nor
 * a cursor to follow: a fake answer to an aborted request would otherwise loop forever.
 */
export async function* scanKeys(
  redis: UpstashClient,
  match: string,
  count = SCAN_COUNT,
): AsyncIterable<string> {
  let cursor = "0"
  do {
    const page: unknown = await redis.scan(cursor, { match, count })
    const [next, keys] = Array.isArray(page) ? page : []
    if (!/^\d+$/.test(String(next)) || !Array.isArray(keys)) throw new UpstashReplyError("scan", page)
    for (const k of keys) yield String(k)
    cursor = String(next)
  } while (cursor !== "0")
}

/** @upstash/redis parses JSON replies by default; accept both the parsed object and the raw string. */
function toRow(v: unknown): Row | null {
  if (v === null || v === undefined || v === "" || v === false) return null
  let parsed: unknown = v
  if (typeof v === "string") {
    // A row the original wrote holding float("nan") has a bare NaN: read as json.loads reads it, not as an outage.
    try {
      parsed = parsePythonRow(v)
    } catch {
      throw new UpstashReplyError("a row read", v)
    }
  }
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Row
  throw new UpstashReplyError("a row read", v)
}

/** A scanned value that may be someone else's key: anything but a ledger row reads as absent. */
function toRowOrNull(v: unknown): Row | null {
  try {
    const r = toRow(v)
    return r && typeof r.request_id === "string" && typeof r.tool === "string" && typeof r.status === "string"
      ? r
      : null
  } catch {
    return null
  }
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

function isNonTerminal(row: Row): boolean {
  const t = row.terminal_outcome === undefined ? "IN_FLIGHT" : row.terminal_outcome
  if (isTerminalOutcome(t)) return t === "IN_FLIGHT" || t === "EXPIRED"
  return row.status === "in-flight"
}

/** A non-terminal row known only from its tombstone reads as an abandoned claim (the original's EXPIRED ghost). */
function ghostRow(row: Row, now: number): Row {
  return isNonTerminal(row) ? { ...row, lease_until: now - 1 } : row
}

/** The claimed row's JSON around its fence, so the script can splice in `prior fence + 1` without re-encoding. */
function splitAtFence(entry: LedgerEntry): [string, string] {
  const row = entryToRow(entry)
  const before: Row = {}
  const after: Row = {}
  let seen = false
  for (const [k, v] of Object.entries(row)) {
    if (k === "fence") seen = true
    else (seen ? after : before)[k] = v
  }
  const head = JSON.stringify(before)
  const tail = JSON.stringify(after)
  return [`${head.slice(0, -1)},"fence":`, `,${tail.slice(1)}`]
}

export function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, "\\$&")
}
