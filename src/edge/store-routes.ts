// `ledger:store`: the raw storage contract for trusted backends (HttpLedgerStorage). These routes can write any
// row, so no agent token reaches them. Leases run on the server's clock whatever the client says.
import { LedgerError, LedgerStorageUnavailableError } from "../core/ledger/errors.ts"
import { entryFromRow, entryToRow, type LedgerEntry } from "../core/ledger/model/entry.ts"
import type { LedgerStorage, TransitionExpectation } from "../core/storage/contract.ts"
import { jsonDepth } from "../core/storage/limits.ts"
import type { Api, RouteContext } from "./context.ts"
import { HttpError } from "./errors.ts"
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
    const expect: TransitionExpectation = {
      outcomes: e.outcomes,
      fence: e.fence,
      ...(e.owner !== undefined ? { owner: e.owner } : {}),
      ...(e.effect_phase ? { effectPhase: e.effect_phase } : {}),
      ...(e.side_effect_boundary ? { sideEffectBoundary: e.side_effect_boundary } : {}),
      // A lease check uses the server's clock, never the client's.
      ...(e.lease_held_at !== undefined ? { leaseHeldAt: ctx.now() } : {}),
    }
    const next = rowEntry(storage, b.next, id)
    return c.json({ ok: await viaStore("transition", () => storage.tryTransition(next, expect)) })
  })

  api.get("/v1/rows", async (c) => {
    const { storage } = ctx.need(c, "store")
    const q = ctx.query(c, RowsQuery)
    const limit = ctx.pageLimit(q.limit)
    const rows = await viaStore("list", async () => {
      const out: Record<string, unknown>[] = []
      for await (const e of storage.list({
        limit,
        ...(q.prefix ? { prefix: q.prefix } : {}),
        ...(q.cursor ? { cursor: q.cursor } : {}),
      })) {
        out.push(entryToRow(e))
      }
      return out
    })
    const last = rows.at(-1)?.request_id
    return c.json({ rows, cursor: rows.length === limit && typeof last === "string" ? last : null })
  })

  api.get("/v1/dispatch/:id", async (c) => {
    const { storage } = ctx.need(c, "store")
    const id = ctx.id(c)
    const rows = await viaStore("find_by_dispatch_id", async () =>
      storage.findByDispatchId ? await storage.findByDispatchId(id) : [],
    )
    // One dispatch id names a handful of rows; the cap keeps a hostile store from answering with thousands.
    return c.json({ rows: rows.slice(0, ctx.maxPageSize).map(entryToRow) })
  })
}
