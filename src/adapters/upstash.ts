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
  keepablePayload,
  type LedgerEntry,
  LedgerRowError,
  LedgerStaleFenceError,
  type LedgerStorage,
  type ListOptions,
  type StorageLimits,
  stampClaim,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { LedgerConfigError } from "../core/ledger/errors.ts"
import { resolvedOutcome } from "../core/ledger/model/entry.ts"
import { parsePythonRow } from "../core/python-nan.ts"
import { clip } from "../core/repr.ts"
import { jsonDepth } from "../core/storage/limits.ts"
import { listsNothing, pairHeadOptions, startingWith } from "../core/storage/text.ts"
import { derivedBase, globEscape, SENT_LUA, scanKeys, sentKey, UpstashReplyError } from "./upstash-kit.ts"

// The family's shared pieces live in upstash-kit.ts; users import the error its stores throw from this entry.
export { UpstashReplyError }

/**
 * The calls the Upstash stores make. An `@upstash/redis` `Redis` (`@upstash/redis`, `/cloudflare` or `/fastly`) is
 * one; spelled out here so that these declarations need no `@upstash/redis` (the plain Redis store, which extends
 * this one, installs none).
 */
export interface UpstashClient {
  createScript(script: string): { exec(keys: string[], args: string[]): Promise<unknown> }
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

// Comments stay out of the Lua text, which ships in every bundle as written; so do its spaces: none around operators
// and no indentation (each `if`, `for` and `function` ends at its `end`), which kept the Upstash entry under 6 KB.
// The write scripts share one layout: KEYS row, tomb, legacy tomb or '', dispatch index of the row or '', then their
// own; ARGV row (the claim's: its head), ttl, request id, then their own.
// Shared Lua: reads a stored row exactly as `entryFromRow` + `resolvedOutcome` in src/core/ledger/model/entry.ts do, so
// the script classifies the same way `classifyClaim` does. Missing `terminal_outcome` reads as IN_FLIGHT, a JSON null
// or unknown value falls back to `status`, unparseable numbers behave like JavaScript's NaN (never equal, never
// greater).
// read(): a key's row (nil when it is no row) and raw value ('' names no key but the empty prefix's key of the id '',
// whose legacy tomb, '' too, reads as that key). load(): the stored row of the request id: the primary key, else (the
// key was evicted) a tombstone, standing for an abandoned claim when non-terminal: its lease counts as lapsed, as in
// the original.
// A tombstone with a higher fence than the key wins: a key put back alone from an older copy let a stale holder
// write over the newer holder's row and took both copies' fence back. With the key or without, the original's copy
// (legacy) when it is this id's, else ours: a Python worker writes only the key and the original's, so ours may lag,
// or name a claim from before the row was deleted (a fresh claim is fence 1 again), whose holder then took the call
// over from Python's.
// legacy: where an older version or a Python worker with this prefix put the tombstone. With a prefix not ending in ':'
// (or empty) the original's tombstone of X is the row key of '-tomb:X': a row of another id is no tombstone of this
// one, and under the primary key it is refused. The primary key's TTL: only while in flight with a bounded lease; never
// shortened by a write. write(): the legacy copy is what a Python worker reads once the primary key expired, so it is
// written too, unless it holds another request's row ('-tomb:X's).
const LUA_PRELUDE = `
local NULL=cjson.null
local VALID={IN_FLIGHT=true,COMPLETED=true,FAILED_BEFORE_EFFECT=true,FAILED_AFTER_EFFECT=true,
EXPIRED=true,BLOCKED=true,UNKNOWN=true}
local NAN=0/0
local function num(v)
if v==nil or v==NULL or v=='' then return nil end
if type(v)=='boolean' then return v and 1 or 0 end
return tonumber(v) or NAN
end
local function fence_of(row)
local f=num(row.fence)
if f==nil or f~=f then return 0 end
return f
end
local function outcome_of(row)
local t=row.terminal_outcome
if t==nil then return 'IN_FLIGHT' end
if VALID[t] then return t end
local s=row.status
if s=='completed' then return 'COMPLETED' end
if s=='failed' then return 'FAILED_BEFORE_EFFECT' end
if s=='in-flight' then return 'IN_FLIGHT' end
return 'UNKNOWN'
end
local function decode(raw)
local ok,row=pcall(cjson.decode,raw)
if ok and type(row)=='table' and type(row.request_id)=='string' and type(row.tool)=='string'
and type(row.status)=='string' then
return row
end
end
local function read(key)
local raw=(KEYS[1]=='' or key~='') and redis.call('GET',key)
if raw then return decode(raw),raw end
end
local function load()
for _,i in ipairs({1,3,2}) do
local row,raw=read(KEYS[i])
if raw then
if row==nil then error('mycelium: corrupt ledger row at '..KEYS[i]) end
if row.request_id==ARGV[3] then
local t=outcome_of(row)
if i==1 then
local n,r=read(KEYS[3])
if not (n and n.request_id==ARGV[3]) then n,r=read(KEYS[2]) end
if n and n.request_id==ARGV[3] and fence_of(n)>fence_of(row) then row,raw=n,r end
end
return row,raw,i>1 and (t=='IN_FLIGHT' or t=='EXPIRED')
end
if i==1 then error('mycelium: '..KEYS[1].." holds another request id's row") end
end
end
end
local function lease_of(row,ghost)
if ghost then return -math.huge end
return num(row.lease_until)
end
local function write(raw)
local ttl=tonumber(ARGV[2])
if ttl>0 then
redis.call('SET',KEYS[1],raw,'EX',math.max(ttl,redis.call('TTL',KEYS[1])))
else
redis.call('SET',KEYS[1],raw)
end
redis.call('SET',KEYS[2],raw)
local held,old=read(KEYS[3])
if KEYS[3]~='' and (not old or held and held.request_id==ARGV[3]) then redis.call('SET',KEYS[3],raw) end
if KEYS[4]~='' then redis.call('SADD',KEYS[4],ARGV[3]) end
end
${SENT_LUA}`

// Every string a script answers for the adapter to parse (a row, a request id) starts with '~', which no JSON text
// does: @upstash/redis JSON-parses reply strings by default, which read an id such as ["x"] or "q" as another id (a
// claim under its tool-call id was written, then failed as an outage), and a row's 100.0 as 100. got(): a key's value
// as MGET reads it, '~' alone for no key or one of another type. triples(): the (id, row, tomb) of each member of a
// dispatch set but the claiming call's own (ARGV[3]; a script without it has none).
const REPLY_LUA = `
local function got(k) return '~'..(redis.call('MGET',k)[1] or '') end
local function triples(out,set,rows,tombs)
for _,id in ipairs(redis.call('SMEMBERS',set)) do
if id~=ARGV[3] then
out[#out+1]='~'..id
out[#out+1]=got(rows..id)
out[#out+1]=got(tombs..id)
end
end
return out
end
`

// KEYS (after the shared four): this call's sent key, dispatch set to read siblings from or ''. ARGV (after the
// shared three): row tail (the new row is head .. fence .. tail), now, reclaim fence ('' any, 'none' none), row
// prefix, tomb prefix. A claim returns {'claimed', fence, 0, sibling id, row, tomb, …}. Siblings are read in the same
// atomic step as the insert: of two racing claims under one dispatch id, the later script always sees the earlier one.
const CLAIM_LUA = `${LUA_PRELUDE}${REPLY_LUA}
local function claim()
local row,raw,ghost=load()
local fence=0
if row~=nil then
local t=outcome_of(row)
local lease=lease_of(row,ghost)
if t=='IN_FLIGHT' and lease~=nil and tonumber(ARGV[5])>=lease then t='EXPIRED' end
fence=fence_of(row)
local claimable=t=='EXPIRED' or t=='FAILED_BEFORE_EFFECT' or t=='FAILED_AFTER_EFFECT'
if not claimable or ARGV[6]~='' and fence~=tonumber(ARGV[6]) then
return {t=='COMPLETED' and 'completed' or 'in_flight','~'..raw,ghost and 1 or 0}
end
end
local nf=string.format('%d',fence+1)
write(ARGV[1]..nf..ARGV[4])
sent(KEYS[5],nf)
return nf
end
local nf=was_sent(KEYS[5]) or claim()
if type(nf)=='table' then return nf end
local out={'claimed',nf,0}
if KEYS[6]~='' then triples(out,KEYS[6],ARGV[7],ARGV[8]) end
return out
`

// KEYS (after the shared four): this call's sent key. ARGV (after the shared three): outcomes (comma-separated),
// owner flag, owner, fence, phase flag, phase, lease flag, lease-held-at, boundary flag, boundary.
const CAS_LUA = `${LUA_PRELUDE}
if was_sent(KEYS[5]) then return 1 end
local row,raw,ghost=load()
if row==nil then return 0 end
local t=row.terminal_outcome
if t==nil then t='IN_FLIGHT' end
local hit=false
for o in string.gmatch(ARGV[4],'[^,]+') do if o==t then hit=true end end
if not hit then return 0 end
if ARGV[5]=='1' then
local o=row.owner
if o==nil or o==NULL or tostring(o)~=ARGV[6] then return 0 end
end
if fence_of(row)~=tonumber(ARGV[7]) then return 0 end
if ARGV[8]=='1' then
local p=row.effect_phase
if p==nil or p==NULL then p='INTENDED' end
if p~=ARGV[9] then return 0 end
end
if ARGV[10]=='1' then
local lease=lease_of(row,ghost)
if lease~=nil and not (lease>tonumber(ARGV[11])) then return 0 end
end
if ARGV[12]=='1' then
local b=row.side_effect_boundary
if b==nil or b==NULL then b='not_crossed' end
if b~=ARGV[13] then return 0 end
end
write(ARGV[1])
sent(KEYS[5],'1')
return 1
`

// ARGV (after the shared three): incoming fence. Returns -1 or the newer stored fence. A resent set writes the same
// row again: no sent key needed.
const SET_LUA = `${LUA_PRELUDE}
local stored=-1
for i=1,3 do
local row=read(KEYS[i])
if row and row.request_id==ARGV[3] then stored=math.max(stored,fence_of(row)) end
end
if stored>tonumber(ARGV[4]) then return stored end
write(ARGV[1])
return -1
`

// findByDispatchId: KEYS dispatch set, ARGV row prefix, tomb prefix; returns triples. get() and list(): KEYS the keys
// to read, no ARGV; returns each key's value. A script, not the client's MGET, whose reply the client would parse.
const READ_LUA = `${REPLY_LUA}if ARGV[1] then return triples({},KEYS[1],ARGV[1],ARGV[2]) end
local out={}
for i,k in ipairs(KEYS) do out[i]=got(k) end
return out`

const DEFAULT_PREFIX = "mycelium:action:"
const DEFAULT_IN_FLIGHT_TTL = 604_800
const MGET_BATCH = 200

/** A script the client runs by EVALSHA, with EVAL only when the server has not cached it yet (NOSCRIPT). */
type Script = ReturnType<UpstashClient["createScript"]>

// The claim script decodes the stored row with Lua's cjson, which refuses an unpaired surrogate's escape and nesting
// past 1,000 levels: such a row, once written, made every later claim of its id fail as if Redis were down.
const MAX_DEPTH = 900
const REDIS_LIMITS: StorageLimits = Object.freeze({ validUnicodeOnly: true, maxDepth: MAX_DEPTH })

/** The Redis ledger backend over the Upstash REST API. Works from any runtime with `fetch`. */
export class UpstashLedgerStorage implements LedgerStorage {
  readonly kind = "upstash"
  /** What the claim script's JSON decoder reads: valid Unicode without U+0000, nested at most 900 deep. */
  readonly limits: StorageLimits = REDIS_LIMITS
  readonly #redis: UpstashClient
  readonly #prefix: string
  readonly #tombPrefix: string
  /** The original's tombstone prefix when it differs, else '': read, and written where it holds no other row. */
  readonly #legacyTombPrefix: string
  /** Null for the empty prefix: every key lies under it, so there is no index and siblings come from a scan. */
  readonly #dispatchPrefix: string | null
  /** Siblings come from a scan of the rows (no index, or `dispatchLookup: "scan"`); the index is still written. */
  readonly #scanDispatch: boolean
  readonly #inFlightTtl: number
  readonly #now: () => number
  readonly #claim: Script
  readonly #cas: Script
  readonly #set: Script
  readonly #read: Script

  constructor(options: UpstashLedgerStorageOptions) {
    this.#redis = options.redis
    this.#prefix = options.prefix ?? DEFAULT_PREFIX
    // The original's `prefix.rstrip(":")`: every trailing ':' goes.
    const pythonTomb = `${this.#prefix.replace(/:+$/, "")}-tomb:`
    const base = derivedBase(this.#prefix)
    this.#tombPrefix = base === null ? pythonTomb : `${base}tomb:`
    this.#legacyTombPrefix = this.#tombPrefix === pythonTomb ? "" : pythonTomb
    this.#dispatchPrefix = base === null ? null : `${base}dispatch:`
    this.#scanDispatch = base === null || options.dispatchLookup === "scan"
    this.#inFlightTtl = options.inFlightTtl ?? DEFAULT_IN_FLIGHT_TTL
    this.#now = options.now ?? (() => Date.now() / 1000)
    this.#claim = this.#redis.createScript(CLAIM_LUA)
    this.#cas = this.#redis.createScript(CAS_LUA)
    this.#set = this.#redis.createScript(SET_LUA)
    this.#read = this.#redis.createScript(READ_LUA)
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    // Keys travel as UTF-8, where an unpaired surrogate is U+FFFD: the key is another id's. No row has such an id
    // (every write refuses it, and the original cannot encode it), so none is read.
    if (!requestId.isWellFormed()) return null
    const values = await this.#values(this.#rowKeys(requestId))
    return this.#fromStored(values, this.#now(), requestId)
  }

  /** Upsert, refusing only a write that would move the fence backwards (a stale writer). */
  async set(entry: LedgerEntry): Promise<void> {
    const stored = await this.#set.exec(this.#keys(entry), [
      decodablePayload(entry),
      String(this.#ttlFor(entry)),
      entry.requestId,
      String(entry.fence),
    ])
    if (!Number.isSafeInteger(stored) || (stored as number) < -1) throw new UpstashReplyError("set", stored)
    if ((stored as number) >= 0) {
      throw new LedgerStaleFenceError(entry.requestId, stored as number, entry.fence)
    }
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    const stamped = stampClaim(entry, null, leaseTtl, now)
    decodablePayload(stamped, "its arguments are too deep or too big")
    const [head, tail] = splitAtFence(stamped)
    // '' claims any claimable row, 'none' none, a fence only the row at that fence.
    let reclaim = ""
    if (options && "reclaimFence" in options)
      reclaim = options.reclaimFence === null ? "none" : String(options.reclaimFence)
    const siblingsOf = this.#scanDispatch ? undefined : options?.dispatchId
    const keys = this.#keys(entry)
    keys.push(sentKey(this.#prefix), siblingsOf ? this.#dispatchPrefix + siblingsOf : "")
    const reply = await this.#claim.exec(keys, [
      head,
      String(leaseTtl > 0 ? this.#ttl(leaseTtl) : 0),
      entry.requestId,
      tail,
      String(now),
      reclaim,
      this.#prefix,
      this.#tombPrefix,
    ])
    // A client given a plain `signal` answers an aborted request with a fake success holding the abort reason:
    // every reply is checked for the shape its script returns, so that (or a broken endpoint) is an outage.
    if (!Array.isArray(reply) || reply.length % 3 !== 0 || !isFlag(reply[2]))
      throw new UpstashReplyError("claim", reply)
    const [outcome, value, ghost] = reply as [unknown, unknown, unknown]
    if (outcome === "claimed") {
      const fence = Number(value)
      if (!Number.isSafeInteger(fence) || fence < 1 || typeof value === "boolean")
        throw new UpstashReplyError("claim", reply)
      const claimed = { ...stamped, fence }
      // Without siblings the ledger asks findByDispatchId after this insert: still one of two racers sees the other.
      if (!siblingsOf) return { outcome, entry: claimed }
      return { outcome, entry: claimed, dispatchSiblings: this.#triples(reply.slice(3), siblingsOf, now) }
    }
    const existing = outcome === "completed" || outcome === "in_flight" ? toRow(value) : null
    if (!existing) throw new UpstashReplyError("claim", reply)
    const stored = storedEntry(existing, ghost === 1, now)
    // The script and `classifyClaim` must agree; if they ever do not, refuse rather than act on a wrong answer.
    const check = decideClaim(stored, entry, leaseTtl, now, options).result.outcome
    if (check !== outcome) throw new UpstashReplyError("claim (classification mismatch)", reply)
    return { outcome: check, entry: stored }
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    const reply = await this.#cas.exec(
      [...this.#keys(next), sentKey(this.#prefix)],
      [
        decodablePayload(next),
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
    return reply === 1
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
    let left = Math.max(0, options.limit ?? Infinity)
    for (let i = 0; i < sorted.length && left > 0; i += MGET_BATCH) {
      const batch = sorted.slice(i, i + MGET_BATCH)
      // The original's tombstone too where there is one: it decides a key's fence as in get().
      const w = this.#legacyTombPrefix ? 3 : 2
      const values = await this.#values(batch.flatMap((id) => this.#rowKeys(id)))
      const now = this.#now()
      for (let j = 0; j < batch.length && left > 0; j++) {
        const e = this.#fromStored(values.slice(w * j, w * j + w), now, batch[j] as string, true)
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
    const reply = await this.#read.exec([this.#dispatchPrefix + dispatchId], [this.#prefix, this.#tombPrefix])
    if (!Array.isArray(reply) || reply.length % 3 !== 0)
      throw new UpstashReplyError("findByDispatchId", reply)
    return this.#triples(reply, dispatchId, this.#now())
  }

  /** Rows from (id, row, tomb) triples of a dispatch set, sorted by request id. */
  #triples(flat: unknown[], dispatchId: string, now: number): LedgerEntry[] {
    const out: LedgerEntry[] = []
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const e = this.#fromStored(flat.slice(i + 1, i + 3), now, String(flat[i]).slice(1))
      // The set only grows; a row whose dispatch id changed since is filtered here.
      if (e && dispatchIdOf(e) === dispatchId) out.push(e)
    }
    // Never two rows of one id: each is its own set member's.
    return out.sort((a, b) => (a.requestId < b.requestId ? -1 : 1))
  }

  async #values(keys: string[]): Promise<unknown[]> {
    const values = await this.#read.exec(keys, [])
    if (!Array.isArray(values) || values.length !== keys.length) throw new UpstashReplyError("get", values)
    return values
  }

  /** The row key, the tombstone and the legacy tombstone where there is one, of `id`: what get() and list() read. */
  #rowKeys(id: string): string[] {
    const keys = [this.#prefix + id, this.#tombPrefix + id]
    if (this.#legacyTombPrefix) keys.push(this.#legacyTombPrefix + id)
    return keys
  }

  /** A write script's keys: the row's, the legacy tombstone's or '', then its dispatch index ('' when it has none). */
  #keys(entry: LedgerEntry): string[] {
    const keys = this.#rowKeys(entry.requestId)
    const d = dispatchIdOf(entry)
    keys[2] ??= ""
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
   * The row of `id` from its primary key (`values[0]`), else the first of its tombstones that is its own: with a
   * prefix not ending in ':' (or empty) the original's tombstone of X is the row key of `-tomb:X`, so a row of another
   * id is no tombstone, and under the primary key it is refused (the script refuses the same). `listed`: `id` came
   * from a scanned key, which may be no row of ours: values that are not its row are skipped.
   */
  #fromStored(values: unknown[], now: number, id: string, listed?: boolean): LedgerEntry | null {
    // Without the key, the original's tombstone before ours, as the scripts' load(): when it holds this id's row it is
    // the newest copy (our writes keep it), and ours may still hold a claim abandoned before a Python worker's
    // completion, which an eviction of the key let a redispatch reclaim and run again.
    for (const i of [0, 2, 1]) {
      const row = listed ? toRowOrNull(values[i]) : toRow(values[i])
      // The row of `id`; outside a scan also a value that is no row at all, which entryFromRow refuses.
      if (row && (row.request_id === id || typeof row.request_id !== "string")) {
        // As the scripts' load(): a tombstone above the key's fence (the key restored alone from an older copy) wins,
        // the original's copy when it is this id's, else ours.
        const own = (t: Row | null) => (t?.request_id === id ? t : null)
        const tomb = i ? null : (own(toRowOrNull(values[2])) ?? own(toRowOrNull(values[1])))
        return storedEntry(tomb && fenceOf(tomb) > fenceOf(row) ? tomb : row, i > 0, now)
      }
      if (row && i === 0 && !listed)
        throw new LedgerRowError(
          `the key of '${clip(id)}' holds another request id's row; use a prefix ending in ':'`,
        )
    }
    return null
  }
}

/** An optional expectation as the CAS script reads it: a "1"/"0" flag, then the value ('' when absent). */
const flagged = (v: string | number | undefined): [string, string] =>
  v === undefined ? ["0", ""] : ["1", String(v)]

/** A script's 0/1 answer: Redis integers arrive as JSON numbers whatever the client's options. */
const isFlag = (v: unknown): boolean => v === 0 || v === 1

/**
 * A row a script answered ('~' and its text, see REPLY_LUA), or null for none. Its text is kept by its kwargs object,
 * so that a rewrite keeps the args and kwargs as a Python worker wrote them (decodablePayload).
 */
function toRow(v: unknown): Row | null {
  if (v === undefined || v === "~") return null
  const t = String(v).slice(1)
  let row: Row | undefined
  // A row the original wrote holding float("nan") has a bare NaN: read as json.loads reads it, not as an outage.
  try {
    row = parsePythonRow(t) as Row
  } catch {}
  if (!row || typeof row !== "object" || Array.isArray(row)) throw new UpstashReplyError("a row read", v)
  // Not a row's own object (refused by entryFromRow, or read as a fresh {}): not kept.
  try {
    written.set(row.kwargs as object, t)
  } catch {}
  return row
}

/** A row's fence as the scripts' fence_of() reads it: absent or not a number is 0. */
const fenceOf = (r: Row): number => +(r.fence ?? 0) || 0

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
 * The entry of a stored row. A non-terminal row known only from its tombstone (`tomb`) reads as an abandoned claim
 * (the original's EXPIRED ghost), its lease lapsed a second ago.
 */
function storedEntry(row: Row, tomb: boolean, now: number): LedgerEntry {
  const entry = entryFromRow(row)
  if (!tomb) return entry
  const t = resolvedOutcome(entry, now)
  return t === "IN_FLIGHT" || t === "EXPIRED" ? { ...entry, leaseUntil: now - 1 } : entry
}

/**
 * The payload a claim, set() and compare-and-set write, refused typed (nothing written) past MAX_DEPTH, the store's
 * `limits.maxDepth`, or holding U+0000 or an unpaired surrogate: the scripts decode the stored row with cjson, so such
 * a row made every later claim and compare-and-set of its id fail as if Redis were down.
 */
function decodablePayload(entry: LedgerEntry, what = "the row is too deep"): string {
  if (jsonDepth(entry, MAX_DEPTH) > MAX_DEPTH)
    throw new LedgerConfigError(
      `request '${clip(entry.requestId)}': ${what} for this store (max_depth ${MAX_DEPTH}); nothing was written`,
    )
  const json = keepablePayload(entry)
  const t = written.get(entry.kwargs)
  if (!t) return json
  const mine = JSON.stringify({ args: entry.args, kwargs: entry.kwargs })
  // Read from a Python worker's text: its args and kwargs go back as written there (json.dumps, in to_dict order),
  // as the original re-derives the args fingerprint from them. They end at the first ', "status": ' after them where
  // they read as this entry's; in entryToRow's JSON they come first but for two strings, so the first match is theirs.
  const i = t.indexOf('"args": ')
  for (let j = t.indexOf(', "status": ', i); i > 0 && j > 0; j = t.indexOf(', "status": ', j + 1))
    try {
      const kept = t.slice(i, j)
      if (JSON.stringify(parsePythonRow(`{${kept}}`)) === mine)
        return json.replace(mine.slice(1, -1), () => kept)
    } catch {}
  return json
}

/** The text of a stored row, by the kwargs object read from it: see toRow. */
const written = new WeakMap<object, string>()

/**
 * The claimed row's JSON around its fence, so the script can splice in `prior fence + 1` without re-encoding. A lone
 * surrogate marks the fence: decodablePayload refused every claim holding one, so its escape is nowhere else.
 */
function splitAtFence(entry: LedgerEntry): [string, string] {
  const row = entryToRow(entry)
  row.fence = "\ud800"
  return JSON.stringify(row).split('"\\ud800"') as [string, string]
}
