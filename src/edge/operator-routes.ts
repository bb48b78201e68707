// `ledger:reader` lists and shows transitions; `ledger:operator` releases them and marks workers dead.
import { isStuck } from "../core/ledger/engine/operators.ts"
import { LedgerError, LedgerWorkerAliveError } from "../core/ledger/errors.ts"
import { entryToRow, resolvedOutcome } from "../core/ledger/model/entry.ts"
import type { Api, RouteContext } from "./context.ts"
import { HttpError } from "./errors.ts"
import { pageBudget } from "./page-bytes.ts"
import { MarkDeadBody, ReleaseBody, TransitionsQuery } from "./schemas.ts"

// A page scans at most this many rows per returned row, so a filter that matches nothing still ends quickly.
const SCAN_FACTOR = 20

export function operatorRoutes(api: Api, ctx: RouteContext): void {
  api.get("/v1/transitions", async (c) => {
    const { ledger } = ctx.need(c, "reader")
    const q = ctx.query(c, TransitionsQuery)
    const limit = ctx.pageLimit(q.limit)
    const stuck = q.stuck === "true" || q.stuck === "1"
    const now = ctx.now()
    const out: Record<string, unknown>[] = []
    const fits = pageBudget(ctx.maxRowPageBytes)
    let scanned = 0
    let lastScanned: string | null = null
    let exhausted = true
    // Pages walk request-id order (the stores' native order), so a cursor is stable under concurrent writes.
    try {
      for await (const e of ledger.storage.list({
        limit: limit * SCAN_FACTOR,
        ...(q.cursor ? { cursor: q.cursor } : {}),
      })) {
        const matches =
          (q.tool === undefined || e.tool === q.tool) &&
          (q.outcome === undefined || resolvedOutcome(e, now) === q.outcome) &&
          (!stuck || isStuck(e, now))
        if (matches) {
          const row = entryToRow(e)
          // Past the page's bytes: the next page starts at this row (the cursor stays on the one before).
          if (!fits(row)) {
            exhausted = false
            break
          }
          out.push(row)
        }
        scanned++
        lastScanned = e.requestId
        if (out.length === limit) {
          exhausted = false
          break
        }
      }
    } catch (e) {
      if (e instanceof LedgerError) throw e
      throw new HttpError(
        "ledger_storage_unavailable",
        "ledger storage unavailable during list; retry shortly",
      )
    }
    if (exhausted && scanned === limit * SCAN_FACTOR) exhausted = false
    return c.json({ transitions: out, cursor: exhausted ? null : lastScanned })
  })

  api.get("/v1/transitions/:id", async (c) => {
    const { ledger } = ctx.need(c, "reader")
    const id = ctx.id(c)
    const row = await ledger.get(id)
    if (!row) throw new HttpError("not_found", `no transition '${id}'`)
    return c.json({ transition: entryToRow(row) })
  })

  api.post("/v1/transitions/:id/release", async (c) => {
    const { ledger } = ctx.need(c, "operator")
    const id = ctx.id(c)
    // Exact, as a completion's: a provider's transaction id past 2^53 was replayed and signed rounded.
    const b = await ctx.body(c, ReleaseBody, "result")
    // Dropping it silently would let an operator believe the result was stored.
    if (b.verified === "not_executed" && b.result !== undefined)
      throw new HttpError("invalid_body", "result: send a result with verified 'completed' only")
    if (!(await ledger.get(id))) throw new HttpError("not_found", `no transition '${id}'`)
    const row = await spelled(
      ledger.release(id, {
        verified: b.verified,
        reason: b.reason,
        by: b.by ?? c.get("principal").subject,
        result: b.result ?? null,
        ...(b.override_death_signal ? { overrideDeathSignal: b.override_death_signal } : {}),
        ...(b.expected_fence !== undefined ? { expectedFence: b.expected_fence } : {}),
        ...(b.force ? { force: true } : {}),
      }),
      `once it is dead, POST /v1/transitions/${id}/mark-worker-dead, or send override_death_signal; read the provider after that, not before`,
    )
    return c.json({ transition: entryToRow(row) })
  })

  api.post("/v1/transitions/:id/mark-worker-dead", async (c) => {
    const { ledger } = ctx.need(c, "operator")
    const id = ctx.id(c)
    const b = await ctx.body(c, MarkDeadBody)
    if (!(await ledger.get(id))) throw new HttpError("not_found", `no transition '${id}'`)
    const row = await spelled(
      ledger.markWorkerDeadFor(id, {
        by: b.by ?? c.get("principal").subject,
        reason: b.reason,
        overrideHeartbeat: b.override_heartbeat ?? false,
        ...(b.expected_fence !== undefined ? { expectedFence: b.expected_fence } : {}),
      }),
      "send override_heartbeat: true",
    )
    return c.json({ transition: entryToRow(row) })
  })
}

/** The ledger names the way out in words of no surface; a caller of this API gets its own spelling of them. */
async function spelled<T>(op: Promise<T>, how: string): Promise<T> {
  try {
    return await op
  } catch (e) {
    if (e instanceof LedgerWorkerAliveError) e.message += ` (over HTTP: ${how})`
    throw e
  }
}
