// The ledger over HTTP, on Hono: any runtime, any storage adapter. Each tenant sees only its own ledger.
import { type Context, Hono } from "hono"
import { z } from "zod"
import { MyceliumError } from "../core/errors.ts"
import { ActionLedger } from "../core/ledger/action-ledger.ts"
import type { Clock } from "../core/ledger/clock.ts"
import { entryFromRow, entryToRow, type LedgerEntry } from "../core/ledger/model/entry.ts"
import { EffectState, isTerminalOutcome, TerminalOutcome } from "../core/ledger/model/enums.ts"
import type { LedgerStorage, TransitionExpectation } from "../core/storage/contract.ts"
import { AuthError, type LedgerScope, type Principal } from "./auth.ts"
import { errorResponse } from "./status.ts"

export interface LedgerAppOptions {
  /** The store for a tenant. A plain storage serves every tenant from one store (use only without auth). */
  readonly storage: LedgerStorage | ((tenant: string) => LedgerStorage)
  /** Verifies `Authorization`; omit to serve everyone as tenant `default` with every scope (local use only). */
  readonly authenticate?: (authorization: string | undefined) => Promise<Principal>
  /** Operator policy for releases, as on ActionLedger. */
  readonly reclaimRequiresDeathSignal?: boolean
  readonly presumedDeadAfter?: number
  readonly clock?: Clock | { now(): number }
  /** Path prefix, e.g. `/ledger`. Default none. */
  readonly basePath?: string
}

type Env = { Variables: { principal: Principal } }

const LOCAL: Principal = {
  tenant: "default",
  subject: "local",
  scopes: new Set<LedgerScope>(["agent", "reader", "operator"]),
}

/** A bad request; its status comes from the code (status.ts). */
export class HttpError extends MyceliumError {
  override readonly name = "HttpError"
  override readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

// The core enums, so the API accepts exactly what the ledger stores.
const OUTCOMES = z.enum(TerminalOutcome)
const PHASES = z.enum(EffectState)
const Row = z.looseObject({ request_id: z.string().min(1), tool: z.string(), status: z.string() })
const Claim = z.strictObject({
  entry: Row,
  lease_ttl: z.number().finite(),
  now: z.number().finite(),
  reclaim_fence: z.number().int().nullable().optional(),
  dispatch_id: z.string().min(1).optional(),
})
const Transition = z.strictObject({
  next: Row,
  expect: z.strictObject({
    outcomes: z.array(OUTCOMES).min(1),
    owner: z.string().nullable().optional(),
    fence: z.number().int(),
    effect_phase: PHASES.optional(),
    lease_held_at: z.number().finite().optional(),
  }),
})
const Release = z.strictObject({
  verified: z.enum(["completed", "not_executed"]),
  reason: z.string().min(1),
  by: z.string().min(1).optional(),
  result: z.json().optional(),
})
const MarkDead = z.strictObject({
  reason: z.string().min(1),
  by: z.string().min(1).optional(),
  override_heartbeat: z.boolean().optional(),
})

async function body<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let raw: unknown
  try {
    raw = await c.req.json()
  } catch {
    throw new HttpError("invalid_json", "request body must be JSON")
  }
  const parsed = schema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue?.path.length ? issue.path.join(".") : "body"
    throw new HttpError("invalid_body", `${where}: ${issue?.message ?? "invalid"}`)
  }
  return parsed.data
}

function rowEntry(row: Record<string, unknown>, id: string): LedgerEntry {
  if (row.request_id !== id) throw new HttpError("invalid_body", "entry.request_id must match the URL")
  return entryFromRow(row)
}

/** `createLedgerApp(options)`: a Hono app serving the ledger API. */
export function createLedgerApp(options: LedgerAppOptions): Hono<Env> {
  const app = new Hono<Env>()
  const api = options.basePath ? app.basePath(options.basePath) : app
  const stores = new Map<string, { storage: LedgerStorage; ledger: ActionLedger }>()
  const forTenant = (tenant: string) => {
    let s = stores.get(tenant)
    if (!s) {
      const storage = typeof options.storage === "function" ? options.storage(tenant) : options.storage
      const ledger = new ActionLedger({
        storage,
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.reclaimRequiresDeathSignal !== undefined
          ? { reclaimRequiresDeathSignal: options.reclaimRequiresDeathSignal }
          : {}),
        ...(options.presumedDeadAfter !== undefined ? { presumedDeadAfter: options.presumedDeadAfter } : {}),
      })
      s = { storage, ledger }
      stores.set(tenant, s)
    }
    return s
  }
  const need = (c: Context<Env>, scope: LedgerScope) => {
    const p = c.get("principal")
    if (!p.scopes.has(scope)) throw new AuthError("forbidden", `this token lacks the '${scope}' scope`)
    return forTenant(p.tenant)
  }

  app.onError((err, c) => {
    const { status, body } = errorResponse(err)
    return c.json(body, status)
  })
  app.notFound((c) =>
    c.json({ error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } }, 404),
  )

  api.get("/health", (c) => c.json({ ok: true }))

  api.use("/v1/*", async (c, next) => {
    c.set(
      "principal",
      options.authenticate ? await options.authenticate(c.req.header("authorization")) : LOCAL,
    )
    await next()
  })

  // ---- operators and dashboards -----------------------------------------------------------------------
  api.get("/v1/transitions", async (c) => {
    const { ledger } = need(c, "reader")
    const outcome = c.req.query("outcome")
    if (outcome !== undefined && !isTerminalOutcome(outcome))
      throw new HttpError("invalid_query", `unknown outcome '${outcome}'`)
    const rows = await ledger.listTransitions({
      stuck: c.req.query("stuck") === "true" || c.req.query("stuck") === "1",
      ...(c.req.query("tool") ? { tool: c.req.query("tool") as string } : {}),
      ...(outcome ? { outcome: outcome as TerminalOutcome } : {}),
    })
    return c.json({ transitions: rows.map(entryToRow) })
  })

  api.get("/v1/transitions/:id", async (c) => {
    const { ledger } = need(c, "reader")
    const row = await ledger.get(c.req.param("id"))
    if (!row) throw new HttpError("not_found", `no transition '${c.req.param("id")}'`)
    return c.json({ transition: entryToRow(row) })
  })

  api.post("/v1/transitions/:id/release", async (c) => {
    const { ledger } = need(c, "operator")
    const b = await body(c, Release)
    const by = b.by ?? c.get("principal").subject
    const row = await ledger.release(c.req.param("id"), {
      verified: b.verified,
      reason: b.reason,
      by,
      result: b.result ?? null,
    })
    return c.json({ transition: entryToRow(row) })
  })

  api.post("/v1/transitions/:id/mark-worker-dead", async (c) => {
    const { ledger } = need(c, "operator")
    const b = await body(c, MarkDead)
    const row = await ledger.markWorkerDeadFor(c.req.param("id"), {
      by: b.by ?? c.get("principal").subject,
      reason: b.reason,
      overrideHeartbeat: b.override_heartbeat ?? false,
    })
    return c.json({ transition: entryToRow(row) })
  })

  // ---- the storage contract, for adapters/http (browser and edge agents) --------------------------------
  api.get("/v1/rows/:id", async (c) => {
    const { storage } = need(c, "agent")
    const row = await storage.get(c.req.param("id"))
    if (!row) throw new HttpError("not_found", `no row '${c.req.param("id")}'`)
    return c.json({ row: entryToRow(row) })
  })

  api.put("/v1/rows/:id", async (c) => {
    const { storage } = need(c, "operator")
    const b = await body(c, z.strictObject({ row: Row }))
    await storage.set(rowEntry(b.row, c.req.param("id")))
    return c.json({ ok: true })
  })

  api.post("/v1/rows/:id/claim", async (c) => {
    const { storage } = need(c, "agent")
    const b = await body(c, Claim)
    const r = await storage.tryClaimInflight(rowEntry(b.entry, c.req.param("id")), b.lease_ttl, b.now, {
      ...(b.reclaim_fence !== undefined ? { reclaimFence: b.reclaim_fence } : {}),
      ...(b.dispatch_id ? { dispatchId: b.dispatch_id } : {}),
    })
    const siblings =
      r.outcome === "claimed" && r.dispatchSiblings
        ? { dispatch_siblings: r.dispatchSiblings.map(entryToRow) }
        : {}
    return c.json({ outcome: r.outcome, entry: entryToRow(r.entry), ...siblings })
  })

  api.post("/v1/rows/:id/transition", async (c) => {
    const { storage } = need(c, "agent")
    const b = await body(c, Transition)
    const e = b.expect
    const expect: TransitionExpectation = {
      outcomes: e.outcomes,
      fence: e.fence,
      ...(e.owner !== undefined ? { owner: e.owner } : {}),
      ...(e.effect_phase ? { effectPhase: e.effect_phase } : {}),
      ...(e.lease_held_at !== undefined ? { leaseHeldAt: e.lease_held_at } : {}),
    }
    return c.json({ ok: await storage.tryTransition(rowEntry(b.next, c.req.param("id")), expect) })
  })

  api.get("/v1/rows", async (c) => {
    const { storage } = need(c, "agent")
    const limitRaw = c.req.query("limit")
    const limit = limitRaw === undefined ? 100 : Number(limitRaw)
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw new HttpError("invalid_query", "limit must be 1..1000")
    const rows: Record<string, unknown>[] = []
    const prefix = c.req.query("prefix")
    const cursor = c.req.query("cursor")
    for await (const e of storage.list({
      limit,
      ...(prefix ? { prefix } : {}),
      ...(cursor ? { cursor } : {}),
    })) {
      rows.push(entryToRow(e))
    }
    const last = rows.at(-1)?.request_id
    return c.json({ rows, cursor: rows.length === limit && typeof last === "string" ? last : null })
  })

  api.get("/v1/dispatch/:id", async (c) => {
    const { storage } = need(c, "agent")
    const rows = storage.findByDispatchId ? await storage.findByDispatchId(c.req.param("id")) : []
    return c.json({ rows: rows.map(entryToRow) })
  })

  return app
}
