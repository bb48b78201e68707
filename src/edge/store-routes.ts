// `ledger:store`: the raw storage contract for trusted backends (HttpLedgerStorage). These routes can write any
// row, so no agent token reaches them. Leases run on the server's clock whatever the client says.
import {
  LedgerDispatchOverflowError,
  LedgerError,
  LedgerStorageUnavailableError,
} from "../core/ledger/errors.ts"
import { entryFromRow, entryToRow, type LedgerEntry, resolvedOutcome } from "../core/ledger/model/entry.ts"
import type { TerminalOutcome } from "../core/ledger/model/enums.ts"
import type { LedgerStorage, TransitionExpectation } from "../core/storage/contract.ts"
import { jsonDepth } from "../core/storage/limits.ts"
import type { Api, RouteContext } from "./context.ts"
import { HttpError } from "./errors.ts"
import { pageBudget } from "./page-bytes.ts"
import { ClaimRowBody, PutRowBody, RowsQuery, TransitionRowBody } from "./schemas.ts"

/** A store failure is an outage (503), whatever the backend threw. */
async function viaStore<T>(op: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof LedgerError) throw e
    throw new LedgerStorageUnavailableError(`ledger storage unavailable during ${op}; retry shortly`, {
      cause: e,
    })
  }
}

const encoder = new TextEncoder()

/** The row as the store will hold it must fit the store's declared limits: refused before the write. */
function checkFits(storage: LedgerStorage, entry: LedgerEntry): void {
  const limits = storage.limits
  if (!limits) return
  const row = entryToRow(entry)
  if (limits.maxDepth !== undefined && jsonDepth(row, limits.maxDepth) > limits.maxDepth)
    throw new HttpError("too_deep", `row nests deeper than the store's limit of ${limits.maxDepth}`)
  if (limits.maxRowBytes !== undefined) {
    const bytes = encoder.encode(JSON.stringify(row)).length
    if (bytes > limits.maxRowBytes)
      throw new HttpError(
        "row_too_large",
        `row is ${bytes} bytes, over the store's limit of ${limits.maxRowBytes}`,
      )
  }
}

function rowEntry(storage: LedgerStorage, row: Record<string, unknown>, id: string): LedgerEntry {
  if (row.request_id !== id) throw new HttpError("invalid_body", "the row's request_id must match the URL")
  let entry: LedgerEntry
  try {
    entry = entryFromRow(row)
  } catch (e) {
    throw new HttpError("invalid_body", `row: ${e instanceof Error ? e.message : String(e)}`)
  }
  checkFits(storage, entry)
  return entry
}

/**
 * Whether the client stamped this row's lease with its own clock at this very write, as the claim route would have
 * with the server's: a claim made by compare-and-set (IN_FLIGHT at the fence after the one expected: a re-run
 * after a verdict) or a renewal (its heartbeat is the instant it asks the lease be held at). Any other write carries a
 * lease stamped before (a boundary, a reference, an operator's field): kept as sent.
 */
function leaseStampedAt(next: LedgerEntry, fence: number, heldAt: number | undefined): boolean {
  if (next.terminalOutcome !== "IN_FLIGHT" || next.leaseUntil === null || next.lastHeartbeatAt === null)
    return false
  return next.fence === fence + 1 || next.lastHeartbeatAt === heldAt
}

/**
 * Whether this write ends the claim it expects without being its holder's: a claim at another fence (a re-run, a
 * release), or an outcome written over an expectation that also takes a row no longer IN_FLIGHT (a redispatch's
 * BLOCKED mark of a lapsed lease, a reconciler's verdict). The holder's own writes expect IN_FLIGHT alone, at its
 * fence, or ask for the lease held (`lease_held_at`); a write that leaves the row IN_FLIGHT at its fence (an
 * operator's dead mark, a repair) takes nothing.
 */
function endsAnothersClaim(
  next: LedgerEntry,
  e: {
    readonly outcomes: readonly (string | null)[]
    readonly fence: number
    readonly lease_held_at?: number | undefined
  },
): boolean {
  if (e.lease_held_at !== undefined) return false
  if (next.fence !== e.fence) return true
  return next.terminalOutcome !== "IN_FLIGHT" && e.outcomes.some((o) => o !== "IN_FLIGHT")
}

/**
 * Refuses (`lease_held`) when `held`'s lease is live by `now` and the write `ends` it, or its heartbeat is, where
 * `silentFor` is given (a worker-dead mark on that silence ends no lease but licenses a re-run once it lapses).
 */
function refuseHeld(
  held: LedgerEntry,
  id: string,
  now: number,
  ends: boolean,
  silentFor: number | undefined,
): void {
  if (ends && held.leaseUntil !== null && resolvedOutcome(held, now) === "IN_FLIGHT")
    throw new HttpError(
      "lease_held",
      `request '${id}' is leased until ${held.leaseUntil} by the server's clock (now ${now}); only its holder may end it`,
    )
  if (silentFor !== undefined && heardWithin(held, now, silentFor))
    throw new HttpError(
      "lease_held",
      // Times, not an age: a heartbeat stamped by a client whose clock runs ahead is later than the server's now.
      `request '${id}' was heard from at ${beatOf(held)} by the server's clock (now ${now}), within the ${silentFor} s of silence taken as its holder's death`,
    )
}

const beatOf = (held: LedgerEntry): number => held.lastHeartbeatAt ?? held.startedAt

/** Whether `held`'s holder was heard from within `silentFor` seconds of `now`, with no worker death asserted. */
const heardWithin = (held: LedgerEntry, now: number, silentFor: number): boolean =>
  held.workerDeadAssertedAt === null && now - beatOf(held) < silentFor

/** The lease the client asked for (its length), from the server's now: its clock never decides a lease. */
function restamped(next: LedgerEntry, now: number): LedgerEntry {
  const ttl = (next.leaseUntil as number) - (next.lastHeartbeatAt as number)
  return { ...next, leaseUntil: now + ttl, lastHeartbeatAt: now }
}

export function storeRoutes(api: Api, ctx: RouteContext): void {
  api.get("/v1/rows/:id", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const row = await viaStore("get", () => storage.get(id))
    if (!row) throw new HttpError("not_found", `no row '${id}'`)
    return c.json({ row: entryToRow(row) })
  })

  api.put("/v1/rows/:id", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const b = await ctx.body(c, PutRowBody)
    const entry = rowEntry(storage, b.row, id)
    await viaStore("set", () => storage.set(entry))
    return c.json({ ok: true })
  })

  api.post("/v1/rows/:id/claim", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const b = await ctx.body(c, ClaimRowBody)
    const entry = rowEntry(storage, b.entry, id)
    // A reclaim on heartbeat silence (reclaimRequiresDeathSignal) read by the client's clock waits for that silence
    // by the server's: the row, still held, is answered as a claim lost to it, which the ledger polls (IN_FLIGHT at
    // the fence it judged). Its heartbeat moves only with a live lease, which the claim below would not take over.
    if (b.silent_for !== undefined && typeof b.reclaim_fence === "number") {
      const held = await viaStore("get", () => storage.get(id))
      if (
        held?.fence === b.reclaim_fence &&
        // A legacy row stores EXPIRED itself: lapsed, but its holder may still be alive.
        (held.terminalOutcome === "IN_FLIGHT" || held.terminalOutcome === "EXPIRED") &&
        heardWithin(held, ctx.now(), b.silent_for)
      )
        return c.json({ outcome: "in_flight", entry: entryToRow(held) })
    }
    const r = await viaStore("claim", () =>
      storage.tryClaimInflight(entry, b.lease_ttl, ctx.now(), {
        ...(b.reclaim_fence !== undefined ? { reclaimFence: b.reclaim_fence } : {}),
        ...(b.dispatch_id ? { dispatchId: b.dispatch_id } : {}),
      }),
    )
    const siblings =
      r.outcome === "claimed" && r.dispatchSiblings
        ? { dispatch_siblings: r.dispatchSiblings.map(entryToRow) }
        : {}
    return c.json({ outcome: r.outcome, entry: entryToRow(r.entry), ...siblings })
  })

  api.post("/v1/rows/:id/transition", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const b = await ctx.body(c, TransitionRowBody)
    const e = b.expect
    const now = ctx.now()
    const expect: TransitionExpectation = {
      // As stored, null included: a field repair expects the row as it read it (a boundary of null checks none).
      outcomes: e.outcomes as TerminalOutcome[],
      fence: e.fence,
      ...(e.owner !== undefined ? { owner: e.owner } : {}),
      ...(e.effect_phase ? { effectPhase: e.effect_phase } : {}),
      ...(e.side_effect_boundary ? { sideEffectBoundary: e.side_effect_boundary } : {}),
      // A lease check uses the server's clock, never the client's.
      ...(e.lease_held_at !== undefined ? { leaseHeldAt: now } : {}),
    }
    const sent = rowEntry(storage, b.next, id)
    // The writer judged the lease lapsed by its own clock; the server's decides. Read, then written: a lease lapsed
    // by this clock stays lapsed at its fence (a renewal must hold it at the server's now), so the write below
    // cannot end a lease that became live in between. An unbounded lease lapses by no clock (a forced release).
    // So did one acting on heartbeat silence (`silent_for`): a heartbeat that is silent stays so once the lease lapsed.
    const ends = endsAnothersClaim(sent, e)
    if (e.silent_for !== undefined || ends) {
      const held = await viaStore("get", () => storage.get(id))
      if (held?.fence === e.fence) refuseHeld(held, id, now, ends, e.silent_for)
    }
    const next = leaseStampedAt(sent, e.fence, e.lease_held_at) ? restamped(sent, now) : sent
    const ok = await viaStore("transition", () => storage.tryTransition(next, expect))
    // The stamps kept, so the client sends them back in place of its own on the holder's later writes.
    return c.json(
      ok && next !== sent
        ? { ok, lease_until: next.leaseUntil, last_heartbeat_at: next.lastHeartbeatAt }
        : { ok },
    )
  })

  api.get("/v1/rows", async (c) => {
    const { storage } = ctx.need(c, "store")
    const q = ctx.query(c, RowsQuery)
    const limit = ctx.pageLimit(q.limit)
    const fits = pageBudget(ctx.maxRowPageBytes)
    let full = false
    const rows = await viaStore("list", async () => {
      const out: Record<string, unknown>[] = []
      for await (const e of storage.list({
        limit,
        ...(q.prefix ? { prefix: q.prefix } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      })) {
        const row = entryToRow(e)
        full = !fits(row)
        if (full) break
        out.push(row)
      }
      return out
    })
    const last = rows.at(-1)?.request_id
    // A page ended by its bytes is as unfinished as one ended by its count.
    const more = full || rows.length === limit
    return c.json({ rows, cursor: more && typeof last === "string" ? last : null })
  })

  api.get("/v1/dispatch/:id", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const rows = await viaStore("find_by_dispatch_id", async () =>
      storage.findByDispatchId ? await storage.findByDispatchId(id) : [],
    )
    // One dispatch id names a handful of rows. More than a page is refused, not cut: the drift check reads every
    // sibling, and a cut list could leave out the one that refuses a drifted re-send (a second payment).
    if (rows.length > ctx.maxPageSize) throw new LedgerDispatchOverflowError(id)
    return c.json({ rows: rows.map(entryToRow) })
  })
}
