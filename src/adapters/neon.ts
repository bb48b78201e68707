// Ledger on Postgres through @neondatabase/serverless, in the Python original's table so both can share one ledger:
// `(request_id TEXT PRIMARY KEY, payload JSONB NOT NULL)`. Claim (a call of the function `migrate()` creates) and
// every compare-and-set are one SQL statement each, so the same code runs over a WebSocket Pool/Client and over the
// HTTP `neon()` function (no interactive transactions).

import {
  type ClaimOptions,
  type ClaimResult,
  decideClaim,
  entryFromRow,
  keepablePayload,
  type LedgerEntry,
  LedgerStaleFenceError,
  type LedgerStorage,
  type ListOptions,
  type StorageLimits,
  stampClaim,
  type TransitionExpectation,
} from "../adapter-kit.ts"
import { MyceliumError } from "../core/errors.ts"
import { LedgerRowError } from "../core/ledger/errors.ts"
import { TerminalOutcome } from "../core/ledger/model/enums.ts"
import { clip } from "../core/repr.ts"
import { isUnstorableText, listsNothing, pairHeadOptions, startingWith } from "../core/storage/text.ts"
import {
  driverRun,
  migration,
  NeonSchemaMissingError,
  type NeonStoreOptions,
  type Run,
  tableName,
  withSchemaHint,
} from "./neon-kit.ts"

// The Neon family's shared pieces live in neon-kit.ts; this entry is where users import them.
export {
  InvalidTableNameError,
  NeonDriverError,
  type NeonHttpQuery,
  type NeonQueryable,
  type NeonStoreOptions,
  NeonTimeoutError,
} from "./neon-kit.ts"
export { NeonSchemaMissingError }

/** A Pool/Client or a neon() function, and the table name (the original's default `mycelium_action_ledger`). */
export type NeonLedgerStorageOptions = NeonStoreOptions

/** A claim kept losing to concurrent writers; retry the call (the store fails closed meanwhile). */
export class NeonClaimRetryError extends MyceliumError {
  override readonly name = "NeonClaimRetryError"
  override readonly code = "neon_claim_retry_exhausted"
}

const PAGE = 500
// A claim that found a row which a concurrent writer then changed before the claim could read it runs again; more
// than a couple of rounds means the row is being rewritten continuously.
const CLAIM_ROUNDS = 20
// Claim modes of the claim function: any claimable row, only the row still at a given fence, or insert only.
const CLAIM_ANY = 0
const CLAIM_AT_FENCE = 1
const CLAIM_INSERT_ONLY = 2

const OUTCOMES = new Set<string>(Object.values(TerminalOutcome))
const sqlList = (xs: Iterable<string>): string => [...xs].map((x) => `'${x}'`).join(",")

// Reads of the JSONB payload with `entryFromRow`'s rules, so SQL classifies exactly as `classifyClaim` does.
// Numbers may be JSON numbers or numeric strings; anything unparseable behaves like JavaScript's NaN.
const NUMERIC_TEXT = String.raw`'^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$'`
const numOf = (p: string, field: string): string =>
  `(CASE jsonb_typeof(${p}->'${field}')` +
  ` WHEN 'number' THEN (${p}->'${field}')::float8` +
  ` WHEN 'boolean' THEN (CASE WHEN (${p}->'${field}')::boolean THEN 1 ELSE 0 END)::float8` +
  ` WHEN 'string' THEN (CASE WHEN ${p}->>'${field}' = '' THEN NULL` +
  ` WHEN ${p}->>'${field}' ~ ${NUMERIC_TEXT} THEN (${p}->>'${field}')::float8 ELSE 'NaN'::float8 END)` +
  ` WHEN 'object' THEN 'NaN'::float8 WHEN 'array' THEN 'NaN'::float8 END)`
const leaseOf = (p: string): string => numOf(p, "lease_until")
const fenceOf = (p: string): string =>
  `(CASE WHEN ${numOf(p, "fence")} IS NULL OR ${numOf(p, "fence")} = 'NaN'::float8 THEN 0::float8` +
  ` ELSE ${numOf(p, "fence")} END)`
const termOf = (p: string): string =>
  `(CASE WHEN ${p} ? 'terminal_outcome' THEN (CASE WHEN jsonb_typeof(${p}->'terminal_outcome') = 'string'` +
  ` THEN ${p}->>'terminal_outcome' END) ELSE 'IN_FLIGHT' END)`
const effectiveOf = (p: string): string =>
  `(CASE WHEN ${termOf(p)} IN (${sqlList(OUTCOMES)}) THEN ${termOf(p)}` +
  ` WHEN ${p}->>'status' = 'completed' THEN 'COMPLETED'` +
  ` WHEN ${p}->>'status' = 'failed' THEN 'FAILED_BEFORE_EFFECT'` +
  ` WHEN ${p}->>'status' = 'in-flight' THEN 'IN_FLIGHT' ELSE 'UNKNOWN' END)`
const claimableAt = (p: string, now: string): string =>
  `(${effectiveOf(p)} IN ('EXPIRED','FAILED_BEFORE_EFFECT','FAILED_AFTER_EFFECT')` +
  ` OR (${effectiveOf(p)} = 'IN_FLIGHT' AND ${leaseOf(p)} IS NOT NULL AND ${leaseOf(p)} <> 'NaN'::float8` +
  ` AND ${leaseOf(p)} <= ${now}))`

// A rewrite keeps the stored args and kwargs where they equal the new ones as JSONB values (100.0 = 100), or where
// the entry holds them as read and they are still so ($4: the payload text read, $5: which of the two came from it;
// JavaScript rounds an int past 2^53). A row a Python worker wrote holds 100.0 where JSON.stringify writes 100 (JSONB
// keeps the text), and the original re-derives the args fingerprint from the stored row: after a release from
// TypeScript its retry drifted.
const kept = (p: string, next: string): string =>
  `${next} || COALESCE((SELECT jsonb_object_agg(k, ${p}->k) FROM unnest('{args,kwargs}'::text[]) k` +
  ` WHERE ${p}->k = ${next}->k OR k = ANY(string_to_array($5, ',')) AND ${p}->k = $4::jsonb->k), '{}')`

const NEON_LIMITS: StorageLimits = Object.freeze({ validUnicodeOnly: true })
/** The JSONB payload of a row, refused typed when Postgres would refuse it (an outage to the ledger otherwise). */

/** The Postgres ledger backend for Neon (or any Postgres reachable by the serverless driver). */
export class NeonLedgerStorage implements LedgerStorage {
  readonly kind = "neon"
  /** JSONB refuses U+0000 and unpaired surrogates: the ledger checks them before a write could be refused. */
  readonly limits: StorageLimits = NEON_LIMITS
  readonly table: string
  readonly #run: Run
  readonly #q: ReturnType<typeof queries>

  constructor(options: NeonLedgerStorageOptions) {
    // 63 bytes less the longest suffix a derived name appends (`_dispatch_idx`).
    const table = tableName(options.table, "mycelium_action_ledger", 50)
    this.table = table
    this.#run = withSchemaHint(driverRun(options), table)
    this.#q = queries(table)
  }

  /** Creates the table and the dispatch-id index if missing. Safe to run on every deploy and concurrently. */
  async migrate(): Promise<void> {
    await this.#run(this.#q.migrate, [])
  }

  async get(requestId: string): Promise<LedgerEntry | null> {
    // No row can have such an id (Postgres refuses its text), and asking for it failed as if Postgres were down.
    if (isUnstorableText(requestId)) return null
    const rows = await this.#run(this.#q.get, [requestId])
    return rows[0] ? fromPayload(rows[0].payload) : null
  }

  /** Upsert, refusing only a write that would move the fence backwards (a stale writer). */
  async set(entry: LedgerEntry): Promise<void> {
    const rows = await this.#run(this.#q.set, [
      entry.requestId,
      keepablePayload(entry),
      entry.fence,
      ...asRead(entry),
    ])
    if (rows.length === 0) {
      const stored = await this.get(entry.requestId)
      throw new LedgerStaleFenceError(entry.requestId, stored?.fence ?? 0, entry.fence)
    }
  }

  async tryClaimInflight(
    entry: LedgerEntry,
    leaseTtl: number,
    now: number,
    options?: ClaimOptions,
  ): Promise<ClaimResult> {
    const stamped = stampClaim(entry, null, leaseTtl, now)
    const payload = keepablePayload(stamped)
    let mode = CLAIM_ANY
    let fence: number | null = null
    if (options && "reclaimFence" in options) {
      if (options.reclaimFence === null) mode = CLAIM_INSERT_ONLY
      else {
        mode = CLAIM_AT_FENCE
        fence = options.reclaimFence ?? null // present but undefined: reclaims nothing, as decideClaim
      }
    }
    const dispatchId = options?.dispatchId ?? null
    const params: unknown[] = [entry.requestId, payload, now, mode, fence, dispatchId]
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const rows = await this.#run(this.#q.claim, params)
      const row = rows[0]
      if (!row) continue // the row vanished between statements (deleted by hand): ask again
      if (row.claim_kind === "claimed") {
        const claimed = { ...stamped, fence: Number(row.claim_fence) }
        // Not 'true': no siblings were read (see claimFunction; an older function answers null).
        if (!dispatchId || row.row_payload !== "true") return { outcome: "claimed", entry: claimed }
        const dispatchSiblings = rows.slice(1).map((r) => fromPayload(r.row_payload))
        return { outcome: "claimed", entry: claimed, dispatchSiblings }
      }
      const existing = fromPayload(row.row_payload)
      const { result } = decideClaim(existing, entry, leaseTtl, now, options)
      // "claimed" here means a concurrent writer changed the row between our statements: ask again.
      if (result.outcome !== "claimed") return result
    }
    throw new NeonClaimRetryError(
      `claim of '${clip(entry.requestId)}' kept racing concurrent writers for ${CLAIM_ROUNDS} rounds; retry later`,
    )
  }

  async tryTransition(next: LedgerEntry, expect: TransitionExpectation): Promise<boolean> {
    const outcomes = expect.outcomes.filter((o) => OUTCOMES.has(o))
    if (outcomes.length === 0) return false
    const p = "t.payload"
    const params: unknown[] = [next.requestId, keepablePayload(next), expect.fence, ...asRead(next)]
    const where = [
      "t.request_id = $1",
      `${termOf(p)} IN (${sqlList(outcomes)})`,
      `${fenceOf(p)} = $3::float8`,
    ]
    if (expect.owner != null) {
      params.push(expect.owner)
      where.push(`${p}->>'owner' = $${params.length}`)
    }
    if (expect.effectPhase !== undefined) {
      params.push(expect.effectPhase)
      where.push(`COALESCE(${p}->>'effect_phase', 'INTENDED') = $${params.length}`)
    }
    if (expect.sideEffectBoundary !== undefined) {
      params.push(expect.sideEffectBoundary)
      where.push(`COALESCE(${p}->>'side_effect_boundary', 'not_crossed') = $${params.length}`)
    }
    if (expect.leaseHeldAt !== undefined) {
      params.push(expect.leaseHeldAt)
      const lease = leaseOf(p)
      where.push(`(${lease} IS NULL OR (${lease} <> 'NaN'::float8 AND ${lease} > $${params.length}::float8))`)
    }
    const rows = await this.#run(
      `UPDATE "${this.table}" AS t SET payload = ${kept(p, "$2::jsonb")} WHERE ${where.join(" AND ")} RETURNING 1 AS ok`,
      params,
    )
    return rows.length === 1
  }

  async *list(options: ListOptions = {}): AsyncIterable<LedgerEntry> {
    const head = pairHeadOptions(options)
    if (head) return yield* startingWith(this.list(head), options)
    if (listsNothing(options)) return
    let cursor = options.cursor ?? null
    let left = options.limit ?? Number.POSITIVE_INFINITY
    while (left > 0) {
      const n = Math.min(PAGE, left)
      const rows = await this.#run(this.#q.list, [options.prefix ?? "", cursor, n])
      for (const r of rows) {
        // The page walks the column: a payload naming another id (a row copied by hand) must not move it back.
        cursor = r.request_id as string
        yield fromPayload(r.payload)
      }
      left -= rows.length
      if (rows.length < n) return
    }
  }

  async findByDispatchId(dispatchId: string): Promise<LedgerEntry[]> {
    if (isUnstorableText(dispatchId)) return []
    const rows = await this.#run(this.#q.byDispatch, [dispatchId])
    return rows.map((r) => fromPayload(r.payload))
  }
}

function queries(table: string) {
  const p = "t.payload"
  // Quoted, so a reserved word is a name too; the lock keys below keep the bare name.
  const tq = `"${table}"`
  const claimFn = `"${table}_claim"`
  // Rows claimed under one dispatch id (`kwargs.tool_call_id`), in key order: the drift siblings and
  // findByDispatchId read the same set through the same index.
  const fromDispatch = (param: string): string =>
    `FROM ${tq} AS t WHERE t.payload->'kwargs'->>'tool_call_id' = ${param}` +
    ` AND jsonb_typeof(t.payload->'kwargs'->'tool_call_id') = 'string'`
  // The claim as a PL/pgSQL function: under READ COMMITTED each statement in it takes a fresh snapshot, so after the
  // advisory lock on the dispatch id it sees every sibling claimed before it (a single CTE statement reads from a
  // snapshot taken before any lock, and could miss one). One round trip still carries the claim and its drift
  // siblings. Under REPEATABLE READ or SERIALIZABLE (a session or role default) the whole call reads the snapshot
  // taken before the lock: it answers no siblings then ('claimed' row's third column not 'true'), and the ledger
  // reads them with findByDispatchId, a statement of its own after this one committed.
  const claimFunction =
    `CREATE OR REPLACE FUNCTION ${claimFn}(p_id text, p_payload jsonb, p_now float8, p_mode int, p_fence float8,` +
    " p_dispatch text) RETURNS TABLE(claim_kind text, claim_fence float8, row_payload text)" +
    " LANGUAGE plpgsql VOLATILE AS $mycelium_claim$ DECLARE f float8;" +
    " rc boolean := current_setting('transaction_isolation') = 'read committed'; BEGIN" +
    ` IF p_dispatch IS NOT NULL THEN PERFORM pg_advisory_xact_lock(hashtextextended('mycelium-dispatch:${table}:' || p_dispatch, 0)); END IF;` +
    ` INSERT INTO ${tq} AS t (request_id, payload) VALUES (p_id, p_payload) ON CONFLICT (request_id) DO NOTHING;` +
    ` IF FOUND THEN f := 1; ELSIF p_mode <> ${CLAIM_INSERT_ONLY} THEN` +
    // fence + 1 in float8, as JavaScript adds: float8::numeric keeps 15 digits, so past 10^15 the fence jumped, or
    // went back (4503599627370494 + 1 was ...491) and a stale writer's set() passed again.
    ` UPDATE ${tq} AS t SET payload = jsonb_set(p_payload, '{fence}', to_jsonb(${fenceOf(p)} + 1))` +
    ` WHERE t.request_id = p_id AND ${claimableAt(p, "p_now")}` +
    ` AND (p_mode = ${CLAIM_ANY} OR ${fenceOf(p)} = p_fence) RETURNING ${fenceOf(p)} INTO f; END IF;` +
    " IF f IS NULL THEN RETURN QUERY SELECT 'existing'::text, NULL::float8, t.payload::text" +
    ` FROM ${tq} AS t WHERE t.request_id = p_id; RETURN; END IF;` +
    " RETURN QUERY SELECT 'claimed'::text, f, rc::text;" +
    " IF rc AND p_dispatch IS NOT NULL THEN RETURN QUERY SELECT 'sibling'::text, NULL::float8, t.payload::text" +
    ` ${fromDispatch("p_dispatch")} AND t.request_id <> p_id ORDER BY t.request_id COLLATE "C";` +
    " END IF; END $mycelium_claim$"
  return {
    migrate: migration(
      table,
      `CREATE TABLE IF NOT EXISTS ${tq} (request_id TEXT PRIMARY KEY, payload JSONB NOT NULL);` +
        // The cross-row args-drift gate looks rows up by dispatch id (`kwargs.tool_call_id`).
        ` CREATE INDEX IF NOT EXISTS "${table}_dispatch_idx" ON ${tq} ((payload->'kwargs'->>'tool_call_id'));` +
        ` ${claimFunction};`,
    ),
    claim:
      `SELECT claim_kind, claim_fence, row_payload FROM ${claimFn}($1::text, $2::jsonb, $3::float8, $4::int,` +
      " $5::float8, $6::text)",
    get: `SELECT payload::text AS payload FROM ${tq} WHERE request_id = $1`,
    set:
      `INSERT INTO ${tq} AS t (request_id, payload) VALUES ($1, $2::jsonb) ON CONFLICT (request_id)` +
      ` DO UPDATE SET payload = ${kept(p, "EXCLUDED.payload")} WHERE ${fenceOf(p)} <= $3::float8 RETURNING 1 AS ok`,
    list:
      `SELECT request_id, payload::text AS payload FROM ${tq} WHERE starts_with(request_id, $1)` +
      ` AND ($2::text IS NULL OR request_id COLLATE "C" > $2::text) ORDER BY request_id COLLATE "C" LIMIT $3`,
    byDispatch: `SELECT t.payload::text AS payload ${fromDispatch("$1")} ORDER BY t.request_id COLLATE "C"`,
  }
}

/** Payloads are selected as text so every driver and type-parser setup hands over the same thing. */
function fromPayload(v: unknown): LedgerEntry {
  const row: unknown = typeof v === "string" ? JSON.parse(v) : v
  if (!row || typeof row !== "object" || Array.isArray(row))
    throw new LedgerRowError("ledger payload is not an object: the row is corrupt; repair or delete it")
  const entry = entryFromRow(row as Record<string, unknown>)
  if (typeof v === "string") read.set(entry.args, v).set(entry.kwargs, v)
  return entry
}

/** The payload text a row was read from, by the args and kwargs objects read from it (see `kept`). */
const read = new WeakMap<object, string>()

/** The payload text `entry`'s kwargs or args were read from, and which of them it holds as read (`kept`'s $4, $5). */
function asRead(entry: LedgerEntry): [string | null, string] {
  const text = read.get(entry.kwargs) ?? read.get(entry.args) ?? null
  return [text, (["args", "kwargs"] as const).filter((k) => read.get(entry[k]) === text).join()]
}
