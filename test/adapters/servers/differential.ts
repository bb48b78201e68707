// Differential testing of ledger stores: one seeded sequence of valid and edge-case operations (claims, the ledger's
// compare-and-sets with right and stale expectations, set() at stale and current fences, lists, odd reads), applied
// to the memory store and to every store under test. Each answer (value, or error class and code) and each final row
// must be the memory store's, except where the contract lets a store differ (see `expected`).
import { entryToRow, keepablePayload, newEntry, refuseUnkeepableClaim } from "../../../src/adapter-kit.ts"
import { seededRandom } from "../../../src/conformance/random.ts"
import {
  type ClaimOptions,
  EffectState,
  type LedgerEntry,
  type LedgerStorage,
  type ListOptions,
  MemoryLedgerStorage,
  SideEffectBoundary,
  type StorageLimits,
  TerminalOutcome,
  type TransitionExpectation,
} from "../../../src/core/index.ts"
import { jsonDepth } from "../../../src/core/storage/limits.ts"
import { isUnstorableText, jsonHoldsUnstorableText } from "../../../src/core/storage/text.ts"

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

const OUTCOMES: readonly TerminalOutcome[] = Object.values(TerminalOutcome)
const PHASES: readonly EffectState[] = Object.values(EffectState)
const BOUNDARIES: readonly SideEffectBoundary[] = Object.values(SideEffectBoundary)

/** Strings every store must keep apart and give back as written; the last three only non-strict stores keep. */
const TEXT = [
  "",
  "plain",
  "\u00e9",
  "e\u0301",
  "\u{1F600}",
  "\u{10FFFF}",
  "\uffff",
  "\ufffd",
  "\u2028\u2029",
  '"\\/\b\f\n\r\t',
  "%_*?[]",
  "__proto__",
  "a\u0000b",
  "\ud800",
  "x\udc00",
]
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  1e-7,
  2 ** 53 - 1,
  2 ** 53,
  -(2 ** 53 - 1),
  2 ** 53 + 2,
  1e21,
  5e-324,
  Number.MAX_VALUE,
  1_800_000_000.25,
]
/** Request ids: UTF-8 and UTF-16 order, Redis glob and key syntax, SQL pattern characters, the tomb layout. */
export const IDS = ["a", "a:b", "a*[?]\\", "a%_", "\u00e9", "e\u0301", "\u{1F600}x", "-tomb:a", "b"]
/** Read but never written: no row has them (NUL and unpaired surrogates cannot be a key in every store). */
const MISSING = ["zz", "a\u0000", "\ud800", "\udc00a", "\u{1F600}"]
const PREFIXES = [undefined, "", "a", "a:", "e", "\u{1F600}", "\ud83d", "\u00e9", "zz", "a\u0000", "\ud800"]
const LIMITS = [undefined, undefined, 0, 1, 2, 3, 100]
// No cursor between U+E000..U+FFFF and the astral ids: Postgres orders ids by code point, the other stores by UTF-16
// unit, and the contract's "request-id order" does not say which.
const CURSORS = [undefined, undefined, "a", "a:b", "\u00e9", "\u{1F600}x", "\u{1F600}", "a\u0000", "\ud800"]
const DISPATCH = ["call-1", "call-2", "call-\u{1F600}"]

/**
 * The highest fence a step writes. Fences stay in 0 .. 2^52: below 0 or past 2^53 - 1 the stores disagree (Redis and
 * Upstash write the claim, then reject their own answer; the HTTP API refuses the body) and the contract does not say
 * which fences are valid.
 */
const FENCE_CAP = 2 ** 52

export type Step =
  | { op: "get"; id: string }
  | { op: "set"; entry: LedgerEntry }
  | { op: "claim"; entry: LedgerEntry; ttl: number; now: number; options?: ClaimOptions }
  | { op: "cas"; kind: string; next: LedgerEntry; expect: TransitionExpectation }
  | { op: "list"; options: ListOptions }
  | { op: "byDispatch"; dispatchId: string }

/** A value the ledger could store as a result or argument: edge text and numbers, nested, big or deep. */
function jsonValue(r: () => number, depth = 0): Json {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
  const roll = r()
  if (roll < 0.3) return pick(TEXT)
  if (roll < 0.55) return pick(NUMBERS)
  if (roll < 0.6) return pick([true, false, null])
  if (roll < 0.62) return `${"\u{1F600}e\u0301x".repeat(20_000)}` // ~100 KB
  if (roll < 0.64) {
    // Past the HTTP API's 128 levels, Redis's declared 900 and Lua cjson's 1,000.
    let deep: Json = pick(TEXT)
    for (let i = pick([127, 899, 1000]); i > 0; i--) deep = [deep]
    return deep
  }
  if (depth > 3) return pick(TEXT)
  if (roll < 0.8) return Array.from({ length: Math.floor(r() * 4) }, () => jsonValue(r, depth + 1))
  const o: { [k: string]: Json } = {}
  for (let i = Math.floor(r() * 4); i > 0; i--) o[pick(TEXT)] = jsonValue(r, depth + 1)
  return o
}

const statusOf = (o: TerminalOutcome): LedgerEntry["status"] =>
  o === "COMPLETED" ? "completed" : o === "IN_FLIGHT" || o === "EXPIRED" ? "in-flight" : "failed"

/**
 * The steps of one sequence, drawn against `ref` (the memory store the others are compared with) so most target real
 * rows, owners and fences; `clock` holds the sequence's time, which only moves forward.
 */
export async function* steps(
  seed: number,
  count: number,
  ref: LedgerStorage,
  clock: { now: number },
): AsyncGenerator<Step> {
  const r = seededRandom(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
  for (let i = 0; i < count; i++) {
    const id = pick(IDS)
    const row = await ref.get(id)
    const fence = row?.fence ?? 0
    const now = clock.now
    const roll = r()
    if (roll < 0.08) {
      clock.now += pick([0.5, 29.75, 30, 301])
      yield { op: "get", id: r() < 0.5 ? pick(MISSING) : id }
    } else if (roll < 0.33) {
      const options = pick<ClaimOptions | undefined>([
        undefined,
        undefined,
        {},
        { reclaimFence: null },
        { reclaimFence: fence },
        { reclaimFence: fence + 1 },
      ])
      const dispatchId = pick(DISPATCH)
      const kwargs = { n: i, tool_call_id: dispatchId, v: r() < 0.3 ? jsonValue(r) : i }
      const entry = newEntry(
        {
          requestId: id,
          tool: r() < 0.8 ? "pay" : pick(TEXT),
          owner: pick(["w1", "w2", pick(TEXT)]),
          kwargs,
        },
        now,
      )
      const withDispatch = r() < 0.5 ? { ...options, dispatchId } : options
      yield { op: "claim", entry, ttl: pick([0, 30, 30, 300]), now, options: withDispatch }
    } else if (roll < 0.75 && row) {
      yield casStep(r, row, now, i)
    } else if (roll < 0.87) {
      const outcome = pick(OUTCOMES)
      const base = row ?? newEntry({ requestId: id, tool: "pay", owner: "w1" }, now)
      const entry: LedgerEntry = {
        ...base,
        terminalOutcome: outcome,
        status: statusOf(outcome),
        fence: pick([0, Math.max(0, fence - 1), fence, fence, fence + 1, 2 ** 31 - 1, 2 ** 32, FENCE_CAP]),
        leaseUntil: pick([null, now + 30, now - 1]),
        effectPhase: pick(PHASES),
        sideEffectBoundary: pick(BOUNDARIES),
        result: jsonValue(r),
        error: r() < 0.3 ? String(pick(TEXT)) : null,
        kwargs: { ...base.kwargs, ...(r() < 0.3 && { tool_call_id: pick(DISPATCH) }) },
      }
      yield { op: "set", entry }
    } else if (roll < 0.95) {
      const options: { -readonly [K in keyof ListOptions]: ListOptions[K] } = {}
      const prefix = pick(PREFIXES)
      const limit = pick(LIMITS)
      const cursor = pick(CURSORS)
      if (prefix !== undefined) options.prefix = prefix
      if (limit !== undefined) options.limit = limit
      if (cursor !== undefined) options.cursor = cursor
      yield { op: "list", options }
    } else {
      yield { op: "byDispatch", dispatchId: pick([...DISPATCH, "call-\ud800", "none"]) }
    }
  }
}

/** One of the ledger's own writes (complete, fail, provider ref, renew, block, release), right or stale. */
function casStep(r: () => number, row: LedgerEntry, now: number, i: number): Step {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T
  const held: TransitionExpectation = {
    outcomes: ["IN_FLIGHT"],
    owner: row.owner,
    fence: row.fence,
    effectPhase: row.effectPhase,
    sideEffectBoundary: row.sideEffectBoundary,
    leaseHeldAt: now,
  }
  const kind = pick(["complete", "fail", "providerRef", "renew", "block", "release", "any"] as const)
  let next: LedgerEntry
  let expect: TransitionExpectation = held
  if (kind === "complete") {
    next = {
      ...row,
      terminalOutcome: "COMPLETED",
      status: "completed",
      result: jsonValue(r),
      finishedAt: now,
    }
  } else if (kind === "fail") {
    const o = pick(["FAILED_BEFORE_EFFECT", "FAILED_AFTER_EFFECT"] as const)
    next = { ...row, terminalOutcome: o, status: "failed", error: `E: ${pick(TEXT)}`, finishedAt: now }
  } else if (kind === "providerRef") {
    next = {
      ...row,
      externalOperationRef: pick(TEXT),
      providerIdempotencyKey: pick(TEXT),
      providerKeyFirstAttemptAt: pick(NUMBERS),
      sideEffectBoundary: "maybe_crossed",
      effectPhase: "ATTEMPTING",
    }
  } else if (kind === "renew") {
    next = { ...row, leaseUntil: now + pick([30, 300]), lastHeartbeatAt: now }
  } else if (kind === "block") {
    const o = pick(["BLOCKED", "UNKNOWN"] as const)
    next = { ...row, terminalOutcome: o, status: "failed", finishedAt: now }
    expect = { ...held, outcomes: ["IN_FLIGHT", "FAILED_AFTER_EFFECT"] }
  } else if (kind === "release") {
    next = {
      ...row,
      terminalOutcome: "FAILED_BEFORE_EFFECT",
      status: "failed",
      releasedFromOutcome: row.terminalOutcome,
      operatorResolution: "not_executed",
      resolvedBy: pick(TEXT),
      resolutionReason: pick(TEXT),
      resolvedAt: now,
    }
    expect = { outcomes: ["BLOCKED", "UNKNOWN"], fence: row.fence }
  } else {
    const o = pick(OUTCOMES)
    next = { ...row, terminalOutcome: o, status: statusOf(o), result: { step: i } }
    expect = { outcomes: [row.terminalOutcome], fence: row.fence }
  }
  // Half the time one requirement is stale: the writer lost its claim, its lease, or the row moved on.
  if (r() < 0.5) {
    const miss = pick(["fence", "fence", "owner", "lease", "phase", "boundary", "outcome"] as const)
    if (miss === "fence") expect = { ...expect, fence: row.fence + pick([-1, 1]) }
    if (miss === "owner") expect = { ...expect, owner: row.owner === "w1" ? "w2" : "w1" }
    if (miss === "lease") expect = { ...expect, leaseHeldAt: row.leaseUntil ?? now }
    if (miss === "phase") expect = { ...expect, effectPhase: pick(PHASES) }
    if (miss === "boundary") expect = { ...expect, sideEffectBoundary: pick(BOUNDARIES) }
    if (miss === "outcome") expect = { ...expect, outcomes: [pick(OUTCOMES)] }
  }
  return { op: "cas", kind, next, expect }
}

/** What an operation answered: a value (as canonical JSON) or a rejection's class and code. */
export type Answer = { value: string } | { error: string; code: string; message?: string }

/** What one store must answer for a step, and whether the reference may take the step. */
interface Expectation {
  /** The answers the contract allows; the first is the reference's. */
  allowed: Answer[]
  /** Whether the reference store takes the step (false when the store must refuse it). */
  apply: boolean
}

/**
 * Where the contract lets this store differ from the memory store, from its declared `limits`:
 * - `validUnicodeOnly`: a row holding U+0000 or an unpaired surrogate is refused with `LedgerConfigError`, nothing
 *   written (set, claim, compare-and-set alike); such a list cursor is refused the same way;
 * - a claim whose row is over `maxDepth` / `maxRowBytes` (with room for an error) is refused (`refuseUnkeepableClaim`).
 * Null: the store must answer what the memory store answers.
 */
export function refusal(step: Step, limits: StorageLimits | undefined): Answer | null {
  if (!limits) return null
  const config = (e: unknown): Answer => ({ error: "LedgerConfigError", code: codeOf(e) })
  try {
    if (step.op === "claim") refuseUnkeepableClaim(step.entry, limits)
    if ((step.op === "set" || step.op === "cas") && limits.validUnicodeOnly)
      keepablePayload(step.op === "set" ? step.entry : step.next)
    if (step.op === "list" && limits.validUnicodeOnly && step.options.cursor !== undefined) {
      if (isUnstorableText(step.options.cursor)) return { error: "LedgerConfigError", code: "invalid_option" }
    }
  } catch (e) {
    return config(e)
  }
  return null
}

/** Whether a written row is over a declared depth or size limit that the contract does not make set()/CAS check. */
export function overLimits(step: Step, limits: StorageLimits | undefined): boolean {
  if (!limits || (step.op !== "set" && step.op !== "cas")) return false
  const row = entryToRow(step.op === "set" ? step.entry : step.next)
  const text = JSON.stringify(row)
  return (
    (limits.maxDepth !== undefined && jsonDepth(row, limits.maxDepth) > limits.maxDepth) ||
    (limits.maxRowBytes !== undefined && new TextEncoder().encode(text).length > limits.maxRowBytes) ||
    (!!limits.validUnicodeOnly && jsonHoldsUnstorableText(text))
  )
}

const codeOf = (e: unknown): string => String((e as { code?: unknown } | null)?.code ?? "")

/** Runs a step on a store, as an `Answer`. Dispatch answers keep only what every store must agree on. */
export async function answer(store: LedgerStorage, step: Step, dispatched: DispatchLog): Promise<Answer> {
  try {
    return { value: canonical(await run(store, step, dispatched)) }
  } catch (e) {
    // The message is shown, never compared: stores word their refusals their own way.
    return {
      error: (e as Error)?.constructor?.name ?? typeof e,
      code: codeOf(e),
      message: String(e).slice(0, 200),
    }
  }
}

/** Request ids ever written under each dispatch id, which a store's index may still return (it only adds). */
export type DispatchLog = Map<string, Set<string>>

async function run(store: LedgerStorage, step: Step, dispatched: DispatchLog): Promise<unknown> {
  switch (step.op) {
    case "get":
      return store.get(step.id)
    case "set":
      return store.set(step.entry).then(() => "ok")
    case "cas":
      return store.tryTransition(step.next, step.expect)
    case "list": {
      const rows: LedgerEntry[] = []
      for await (const e of store.list(step.options)) rows.push(e)
      return rows
    }
    case "byDispatch": {
      if (!store.findByDispatchId) return "no index"
      return dispatchView(await store.findByDispatchId(step.dispatchId), step.dispatchId, dispatched, null)
    }
    case "claim": {
      const got = await store.tryClaimInflight(step.entry, step.ttl, step.now, step.options)
      const d = step.options?.dispatchId
      const siblings =
        got.outcome === "claimed" && got.dispatchSiblings && d
          ? dispatchView(got.dispatchSiblings, d, dispatched, step.entry.requestId)
          : "none asked or given"
      return { outcome: got.outcome, entry: got.entry, siblings }
    }
  }
}

/**
 * The rows now under `d` (all of which must be found), and whether every other row found was written under `d`
 * once (an index that only adds may return it: the contract allows it, so it is not compared).
 */
function dispatchView(rows: readonly LedgerEntry[], d: string, dispatched: DispatchLog, self: string | null) {
  const ever = dispatched.get(d) ?? new Set()
  const current = rows.filter((e) => e.kwargs.tool_call_id === d && e.requestId !== self)
  const strays = rows.filter((e) => e.kwargs.tool_call_id !== d && !ever.has(e.requestId))
  return {
    current: current.map((e) => e.requestId).sort(),
    strays: strays.map((e) => e.requestId),
  }
}

/** Notes the dispatch id of every row a step may have written (before it runs, so racing views see it). */
export function logDispatch(step: Step, dispatched: DispatchLog): void {
  const e =
    step.op === "set" ? step.entry : step.op === "claim" ? step.entry : step.op === "cas" ? step.next : null
  const d = e?.kwargs.tool_call_id
  if (e && typeof d === "string" && d) dispatched.set(d, (dispatched.get(d) ?? new Set()).add(e.requestId))
}

/**
 * Values compare by their JSON, the form every durable store keeps: key order (Postgres JSONB sorts keys), `-0`
 * (JSON has none) and `undefined` members do not count. Nothing else is normalized: no store chooses a timestamp
 * (leases and heartbeats are stamped from the caller's `now`).
 */
export function canonical(v: unknown): string {
  return (
    JSON.stringify(v ?? null, (_k, x: unknown) =>
      x && typeof x === "object" && !Array.isArray(x)
        ? Object.fromEntries(
            Object.entries(x as Record<string, unknown>).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0)),
          )
        : x,
    ) ?? "undefined"
  )
}

/** A store under test beside its own reference: a memory store that takes the steps the store may take. */
export interface Lane {
  readonly name: string
  readonly store: LedgerStorage
  ref: MemoryLedgerStorage
  readonly dispatched: DispatchLog
}

export const lane = (name: string, store: LedgerStorage): Lane => ({
  name,
  store,
  ref: new MemoryLedgerStorage(),
  dispatched: new Map(),
})

/** A divergence: the step, what the store answered, and what the contract allows. */
export interface Divergence {
  readonly store: string
  readonly seed: number
  readonly index: number
  readonly step: string
  readonly got: Answer
  readonly allowed: Answer[]
}

/** Runs one step on a lane; returns the divergence, if any. The reference follows what the store may do. */
export async function stepLane(l: Lane, step: Step, seed: number, index: number): Promise<Divergence | null> {
  logDispatch(step, l.dispatched)
  const refuse = refusal(step, l.store.limits)
  const exp: Expectation = refuse
    ? { allowed: [refuse], apply: false }
    : { allowed: [await answer(l.ref, step, l.dispatched)], apply: true }
  // A page of no rows is empty whatever its cursor: a store may answer it before judging the cursor.
  if (step.op === "list" && refuse && (step.options.limit ?? 1) <= 0) exp.allowed.push({ value: "[]" })
  const got = await answer(l.store, step, l.dispatched)
  // `dispatchSiblings` is optional (the ledger asks findByDispatchId instead): compared only when the store gives them.
  if (step.op === "claim" && "value" in got && exp.apply) {
    const g = JSON.parse(got.value) as { siblings: unknown }
    const [want] = exp.allowed
    if (want && "value" in want && typeof g.siblings === "string") {
      const w = JSON.parse(want.value) as { siblings: unknown }
      exp.allowed = [{ value: canonical({ ...w, siblings: g.siblings }) }]
    }
  }
  // A set() or compare-and-set of a row over the store's declared depth or size: the contract does not say whether
  // the store refuses it, so a refusal that writes nothing is taken; the reference then rolls back to the store's row.
  if (!refuse && "error" in got && overLimits(step, l.store.limits)) {
    const id = idOf(step) as string
    const stored = await l.store.get(id).catch(() => undefined)
    if (stored !== undefined) l.ref = await withRow(l.ref, id, stored)
    return null
  }
  const same = exp.allowed.some((a) => canonical(comparable(a)) === canonical(comparable(got)))
  if (same) return null
  // Later steps compare against the store's row, so one divergence is reported once, not at every step after it.
  const id = idOf(step)
  if (id !== null) {
    const stored = await l.store.get(id).catch(() => undefined)
    if (stored !== undefined) l.ref = await withRow(l.ref, id, stored)
  }
  return { store: l.name, seed, index, step: describe(step), got, allowed: exp.allowed }
}

const comparable = (a: Answer): Answer => ("error" in a ? { error: a.error, code: a.code } : a)

/** The row a step may write. */
const idOf = (step: Step): string | null =>
  step.op === "set" || step.op === "claim"
    ? step.entry.requestId
    : step.op === "cas"
      ? step.next.requestId
      : null

/** A copy of `ref` whose row of `id` is `row` (a memory store has no delete, and set() refuses a lower fence). */
async function withRow(
  ref: MemoryLedgerStorage,
  id: string,
  row: LedgerEntry | null,
): Promise<MemoryLedgerStorage> {
  const copy = new MemoryLedgerStorage()
  for await (const e of ref.list()) if (e.requestId !== id) await copy.set(e)
  if (row) await copy.set(row)
  return copy
}

/** The final rows of a lane: every id, through get() and through list(), must be the reference's. */
export async function finalRows(l: Lane): Promise<string[]> {
  const out: string[] = []
  const listed = async (s: LedgerStorage) => {
    const rows: LedgerEntry[] = []
    for await (const e of s.list()) rows.push(e)
    return canonical(rows)
  }
  for (const id of IDS) {
    const [got, want] = [await l.store.get(id), await l.ref.get(id)]
    if (canonical(got) !== canonical(want)) out.push(`row '${id}': ${short(got)} vs reference ${short(want)}`)
  }
  const [got, want] = [await listed(l.store), await listed(l.ref)]
  if (got !== want) out.push(`list(): ${got.slice(0, 300)} vs reference ${want.slice(0, 300)}`)
  return out
}

/** The fields a set() or compare-and-set step usually turns on. */
const pickFields = (e: LedgerEntry) => ({
  requestId: e.requestId,
  terminalOutcome: e.terminalOutcome,
  fence: e.fence,
  owner: e.owner,
  leaseUntil: e.leaseUntil,
  result: e.result,
  error: e.error,
  kwargs: e.kwargs,
})

const short = (v: unknown): string => canonical(v).slice(0, 300)

/** Where two answers first differ, as `path: got vs want`, values cut short. */
export function firstDifference(got: Answer, want: Answer | undefined): string {
  if (!want) return "no answer allowed"
  if (!("value" in got) || !("value" in want)) return `${JSON.stringify(got)} vs ${JSON.stringify(want)}`
  const walk = (a: unknown, b: unknown, path: string): string | null => {
    if (canonical(a) === canonical(b)) return null
    if (a && b && typeof a === "object" && typeof b === "object") {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const d = walk((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`)
        if (d) return d
      }
    }
    return `${path || "."}: ${short(a).slice(0, 120)} vs ${short(b).slice(0, 120)}`
  }
  return walk(JSON.parse(got.value), JSON.parse(want.value), "") ?? "equal"
}

/** A step as a failure message shows it: long values cut, so a 100 KB result does not flood the log. */
export function describe(step: Step): string {
  const brief =
    step.op === "claim"
      ? {
          ...step,
          entry: { requestId: step.entry.requestId, owner: step.entry.owner, kwargs: step.entry.kwargs },
        }
      : step.op === "cas"
        ? { ...step, next: pickFields(step.next) }
        : step.op === "set"
          ? { ...step, entry: pickFields(step.entry) }
          : step
  return JSON.stringify(brief, (_k, v: unknown) =>
    typeof v === "string" && v.length > 60
      ? `${v.slice(0, 40)}…(${v.length} chars)`
      : Array.isArray(v) && jsonDepth(v) > 8
        ? `[array nested ${jsonDepth(v)} deep]`
        : v,
  )
}
