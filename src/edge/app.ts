// The ledger over HTTP, on Hono: any runtime, any storage adapter. Each tenant sees only its own ledger.
import { Hono } from "hono"
import { cors } from "hono/cors"
import { en } from "zod/locales"
import type * as z from "zod/mini"
import { InvalidOptionError } from "../core/errors.ts"
import { LedgerConfigError } from "../core/ledger/errors.ts"
import { ActionLedger, type ArgsDriftPolicy, type Clock, type LedgerStorage } from "../core/ledger/index.ts"
import { clean } from "../core/repr.ts"
import { secondsProblem } from "../core/seconds.ts"
import { STORE_FAULT_CODES } from "../core/storage/store-faults.ts"
import { isUnstorableText } from "../core/storage/text.ts"
import { agentRoutes } from "./agent-routes.ts"
import { AuthError, type LedgerScope, type Principal } from "./auth.ts"
import { type BodyLimits, DEFAULT_BODY_LIMITS, type ExactMember, MAX_ID, readJsonBody } from "./body.ts"
import type { Api, AppEnv, Ctx, RouteContext, Tenant, TenantReceipts } from "./context.ts"
import { HttpError } from "./errors.ts"
import { DOCS_HTML, openApiDocument } from "./openapi.ts"
import { operatorRoutes } from "./operator-routes.ts"
import { receiptRoutes } from "./receipt-routes.ts"
import { errorResponse } from "./status.ts"
import { storeRoutes } from "./store-routes.ts"

export interface LedgerAppOptions {
  /** The store for a tenant. A plain storage is every tenant's, with `authenticate` too: a factory keeps them apart. */
  readonly storage: LedgerStorage | ((tenant: string) => LedgerStorage)
  /** Verifies `Authorization`; omit to serve everyone as tenant `default` with every scope (local use only). */
  readonly authenticate?: (authorization: string | undefined) => Promise<Principal>
  /** Operator policy for releases and reclaims, as on ActionLedger. */
  readonly reclaimRequiresDeathSignal?: boolean
  readonly presumedDeadAfter?: number
  /** Args-drift policy for agent calls, as on ActionLedger. Default `soft`. */
  readonly onArgsDrift?: ArgsDriftPolicy
  readonly clock?: Clock | { now(): number }
  /** Path prefix, e.g. `/ledger`. Default none. */
  readonly basePath?: string
  /** Request body limits (bytes, JSON depth). Default 1 MiB, 128 levels. */
  readonly limits?: Partial<BodyLimits>
  /** Lease an agent call gets when it asks for none, and the most it may ask for (seconds). Default 60 / 3600. */
  readonly defaultLeaseTtl?: number
  readonly maxLeaseTtl?: number
  /** Seconds an agent is told to wait before asking again about a call another worker holds. Default 0.05. */
  readonly pollInterval?: number
  /** Page sizes of list routes. Default 100, at most 500. */
  readonly defaultPageSize?: number
  readonly maxPageSize?: number
  /** Most receipts `POST /v1/receipts/verify` loads; a tenant holding more gets 413 `too_many_receipts`. Default 100,000. */
  readonly maxVerifyReceipts?: number
  /** Most bytes of receipts (their JSON text) it loads; more is 413 `too_many_receipts` too. Default 64 MiB. */
  readonly maxVerifyBytes?: number
  /** Most bytes of receipt lines a `GET /v1/receipts` page holds (one larger receipt comes alone). Default 8 MiB. */
  readonly maxReceiptPageBytes?: number
  /**
   * Most characters of rows (their JSON text) a `GET /v1/rows` or `GET /v1/transitions` page holds (one larger row
   * comes alone), from 1 to 64 Mi. Default 8 Mi.
   */
  readonly maxRowPageBytes?: number
  /**
   * Browser origins allowed to call the API cross-origin (CORS), e.g. `["https://app.example.com"]`. Default none:
   * only same-origin pages and non-browser clients. Tokens travel in `Authorization`, never in cookies.
   */
  readonly corsOrigins?: readonly string[]
  /**
   * A tenant's audit receipts: calls completed and releases made through this app emit them, `GET /v1/receipts`
   * lists them and `POST /v1/receipts/verify` checks them with `keys` (an HMAC secret or a JWS verifier).
   */
  readonly receipts?: (tenant: string) => TenantReceipts
  /**
   * Tenants whose ledger (and `storage(tenant)`, `receipts(tenant)`) stay built between requests; the least recently
   * used is dropped past this many and built again when it comes back. Default: no limit. Set one when tenants are
   * many and the factory reaches shared storage (the worker keeps 1,000); never with a factory that makes a new
   * in-memory store, whose rows would go with it.
   */
  readonly maxCachedTenants?: number
}

export type { TenantReceipts } from "./context.ts"

const LOCAL: Principal = {
  tenant: "default",
  subject: "local",
  scopes: new Set<LedgerScope>(["agent", "reader", "operator", "store"]),
}

export { HttpError } from "./errors.ts"

/** Seconds since a cached tenant's last request began (none running) before `maxCachedTenants` may drop it. */
const TENANT_IDLE = 300
/**
 * Seconds after which a tenant counted busy goes all the same: workerd cancels a request whose client went away (a
 * client's timeout) without running its `finally`, and its count pinned the tenant past the cap for the isolate's life.
 */
const TENANT_STUCK = 3600

/** `Name (code): message` on one line, control and invisible characters escaped (`clean`). */
function oneLine(err: Error): string {
  const code = (err as { code?: unknown }).code
  return clean(`${err.name}${typeof code === "string" ? ` (${code})` : ""}: ${err.message}`)
}

/**
 * The deepest JSON a body may nest (`limits.maxDepth`): the server walks a body recursively (validation, keys, the
 * store), and 10,000 levels overflowed Node's stack (a 500). 5,000 passed there; this leaves room for smaller stacks.
 */
const MAX_BODY_DEPTH = 1000

/** A body limit: a whole number from 1 to `max`. NaN compared false with every size and depth, so none applied. */
function bodyLimit(given: Partial<BodyLimits> | undefined, name: keyof BodyLimits, max: number): number {
  const v = given?.[name] ?? DEFAULT_BODY_LIMITS[name]
  if (Number.isInteger(v) && v >= 1 && v <= max) return v
  const range = max === MAX_BODY_DEPTH ? `from 1 to ${max}` : ">= 1"
  throw new InvalidOptionError(
    `limits.${name} must be a whole number ${range}, got ${String(v)}: pass e.g. { limits: { ${name}: ${DEFAULT_BODY_LIMITS[name]} } }, or omit it`,
  )
}

/** A page size option: a whole number from 1 to `max` (the query's `limit` takes at most four digits). */
function pageSize(name: string, v: number, max: number): number {
  if (Number.isInteger(v) && v >= 1 && v <= max) return v
  throw new InvalidOptionError(`${name} must be a whole number from 1 to ${max}, got ${String(v)}`)
}

/** `createLedgerApp(options)`: a Hono app serving the ledger API. */
export function createLedgerApp(options: LedgerAppOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
  const api = (options.basePath ? app.basePath(options.basePath) : app) as Api
  const clockNow = options.clock ? () => (options.clock as { now(): number }).now() : () => Date.now() / 1000
  const ledgerOptions = {
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.reclaimRequiresDeathSignal !== undefined
      ? { reclaimRequiresDeathSignal: options.reclaimRequiresDeathSignal }
      : {}),
    ...(options.presumedDeadAfter !== undefined ? { presumedDeadAfter: options.presumedDeadAfter } : {}),
    ...(options.onArgsDrift ? { onArgsDrift: options.onArgsDrift } : {}),
    onWarning: () => {},
  }
  const tenants = new Map<string, { tenant: Tenant; at: number }>()
  // Requests running per tenant. Idle time alone counts from a request's start: one stalled past it (a store that
  // hangs) lost its ledger, the tenant's next request built a second, and the stalled write put back its old row.
  const busy = new Map<string, number>()
  const cap = options.maxCachedTenants ?? Number.POSITIVE_INFINITY
  if (!(cap >= 1) || (cap !== Number.POSITIVE_INFINITY && !Number.isInteger(cap)))
    throw new InvalidOptionError(`maxCachedTenants must be a whole number >= 1, got ${String(cap)}`)
  const forTenant = (name: string): Tenant => {
    const now = clockNow()
    const cached = tenants.get(name)
    // Most recently used last: Map keeps insertion order, so the first key is the least recently used.
    tenants.delete(name)
    let t = cached?.tenant
    if (!t) {
      const storage = typeof options.storage === "function" ? options.storage(name) : options.storage
      const receipts = options.receipts ? options.receipts(name) : null
      const ledger = new ActionLedger({
        storage,
        ...ledgerOptions,
        owner: "edge-api",
        receipts: receipts?.emitter ?? null,
      })
      t = { storage, ledger, receipts }
    }
    tenants.set(name, { tenant: t, at: now })
    // Only a tenant idle for TENANT_IDLE seconds with no request running goes: one ledger queues the writes to a row
    // that overlapping requests of one call make (a renewal beside a boundary report), and two ledgers built on one
    // read would keep only the later write's fields (an external_operation_ref lost). Past the cap while all are
    // busy, none, until TENANT_STUCK.
    for (const [oldest, { at }] of tenants) {
      if (tenants.size <= cap || now - at < TENANT_IDLE) break
      if (!busy.has(oldest) || now - at >= TENANT_STUCK) {
        tenants.delete(oldest)
        busy.delete(oldest)
      }
    }
    return t
  }
  const limits: BodyLimits = {
    maxBodyBytes: bodyLimit(options.limits, "maxBodyBytes", Number.MAX_SAFE_INTEGER),
    maxDepth: bodyLimit(options.limits, "maxDepth", MAX_BODY_DEPTH),
  }
  // The ledger options as ActionLedger checks them, once here: built per tenant on a request, a NaN
  // presumedDeadAfter or an unknown onArgsDrift answered every agent call with a 400 that blamed the agent.
  try {
    // With its own owner: the default one is random, and workerd refuses random values while a module loads (a
    // Worker building the app at module scope, the usual Hono pattern, would not start).
    new ActionLedger({ ...ledgerOptions, owner: "edge-api" })
  } catch (e) {
    throw e instanceof LedgerConfigError ? new InvalidOptionError(e.message, { cause: e }) : e
  }
  // Checked here, not per request: NaN (an unset env var) refused every begin as the agent's invalid_option, 0 gave
  // every call an unbounded lease and Infinity let an agent take one that never lapses.
  const lease = (name: "defaultLeaseTtl" | "maxLeaseTtl", fallback: number): number => {
    const v = options[name] ?? fallback
    const problem = secondsProblem(name, v) ?? (v > 0 ? null : `${name} must be > 0`)
    if (problem) throw new InvalidOptionError(`${problem}: pass e.g. { ${name}: ${fallback} }, or omit it`)
    return v
  }

  // NaN page sizes let any limit through (limit < NaN is false), and a NaN pollInterval told agents retry_after null.
  const pollInterval = options.pollInterval ?? 0.05
  const pollProblem =
    secondsProblem("pollInterval", pollInterval) ?? (pollInterval > 0 ? null : "pollInterval must be > 0")
  if (pollProblem)
    throw new InvalidOptionError(`${pollProblem}: pass e.g. { pollInterval: 0.05 }, or omit it`)
  const maxPageSize = pageSize("maxPageSize", options.maxPageSize ?? 500, 9999)
  const ctx: RouteContext = {
    limits,
    defaultLeaseTtl: lease("defaultLeaseTtl", 60),
    maxLeaseTtl: lease("maxLeaseTtl", 3600),
    pollInterval,
    defaultPageSize: pageSize(
      "defaultPageSize",
      options.defaultPageSize ?? Math.min(100, maxPageSize),
      maxPageSize,
    ),
    maxPageSize,
    maxVerifyReceipts: options.maxVerifyReceipts ?? 100_000,
    maxVerifyBytes: options.maxVerifyBytes ?? 64 * 1024 * 1024,
    maxReceiptPageBytes: options.maxReceiptPageBytes ?? 8 * 1024 * 1024,
    maxRowPageBytes: pageSize(
      "maxRowPageBytes",
      options.maxRowPageBytes ?? 8 * 1024 * 1024,
      64 * 1024 * 1024,
    ),
    pageLimit(raw) {
      const limit = raw === undefined ? this.defaultPageSize : Number(raw)
      if (limit < 1 || limit > this.maxPageSize)
        throw new HttpError("invalid_query", `limit must be 1..${this.maxPageSize}`)
      return limit
    },
    now: clockNow,
    need(c: Ctx, scope: LedgerScope): Tenant {
      const p = c.get("principal")
      if (!p.scopes.has(scope))
        throw new AuthError("forbidden", `this token lacks the 'ledger:${scope}' scope`)
      return forTenant(p.tenant)
    },
    claimLedger(tenant, owner, leaseTtl) {
      // pollTimeout 0: a live row answers "poll" at once instead of holding the request open. Death by silence is
      // the app's, as on the operator routes: by default 2 x the begin's own lease_ttl, so an agent token sending
      // lease_ttl 1 presumed a live worker dead after 2 s of silence and took its call over.
      return new ActionLedger({
        storage: tenant.storage,
        ...ledgerOptions,
        presumedDeadAfter: options.presumedDeadAfter ?? 7200,
        receipts: tenant.receipts?.emitter ?? null,
        owner,
        leaseTtl,
        leaseRenewInterval: 0,
        pollTimeout: 0,
      })
    },
    async body<T extends z.ZodMiniType>(c: Ctx, schema: T, exact?: ExactMember): Promise<z.infer<T>> {
      return validated(schema, await readJsonBody(c.req.raw, limits, exact), "invalid_body")
    },
    query<T extends z.ZodMiniType>(c: Ctx, schema: T): z.infer<T> {
      const raw = c.req.query()
      for (const [k, v] of Object.entries(raw))
        if (isUnstorableText(k) || isUnstorableText(v))
          throw new HttpError("invalid_query", `${k}: holds U+0000 or an unpaired surrogate`)
      return validated(schema, raw, "invalid_query")
    },
    id(c: Ctx): string {
      const id = c.req.param("id") ?? ""
      if (id.length < 1 || id.length > MAX_ID)
        throw new HttpError("invalid_path", `id must be 1..${MAX_ID} characters`)
      if (isUnstorableText(id))
        throw new HttpError("invalid_path", "id holds U+0000 or an unpaired surrogate")
      return id
    },
  }

  app.onError((err, c) => {
    const { status, body } = errorResponse(err)
    if (status === 500) console.error("[mycelium] edge API internal error:", err)
    // The detail hidden from the caller (a path, a lock file) is what the operator needs: one line per request, its
    // control characters escaped (a corrupt file's own text is in the message), no stack (the fault is not a bug).
    else if (
      body.error.code === "receipt_append_failed" ||
      body.error.code === "receipt_unsigned" ||
      (body.error.code !== "ledger_storage_unavailable" && STORE_FAULT_CODES.has(body.error.code))
    )
      console.error(`[mycelium] edge API storage fault: ${oneLine(err)}`)
    return c.json(body, status)
  })
  app.notFound((c) =>
    c.json({ error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } }, 404),
  )

  if (options.corsOrigins?.length) {
    api.use(
      "*",
      cors({
        origin: [...options.corsOrigins],
        allowMethods: ["GET", "POST", "PUT"],
        allowHeaders: ["authorization", "content-type"],
        maxAge: 600,
      }),
    )
  }

  api.get("/health", (c) => c.json({ ok: true }))
  api.get("/openapi.json", (c) => c.json(openApiDocument()))
  api.get("/docs", (c) => c.html(DOCS_HTML))

  api.use("/v1/*", async (c, next) => {
    const p = options.authenticate ? await options.authenticate(c.req.header("authorization")) : LOCAL
    c.set("principal", p)
    busy.set(p.tenant, (busy.get(p.tenant) ?? 0) + 1)
    try {
      await next()
    } finally {
      const left = (busy.get(p.tenant) ?? 1) - 1
      if (left > 0) busy.set(p.tenant, left)
      else busy.delete(p.tenant)
    }
  })

  agentRoutes(api, ctx)
  operatorRoutes(api, ctx)
  storeRoutes(api, ctx)
  receiptRoutes(api, ctx)
  return app
}

// zod/mini (it tree-shakes: about half of classic zod in the worker) loads no messages. The English ones classic zod
// uses are passed per parse, so a 400 says what was wrong ("Too big: expected string to have <=200 characters")
// without changing the zod configuration of the application that mounts this app.
const messages = { error: en().localeError }

function validated<T extends z.ZodMiniType>(schema: T, raw: unknown, code: string): z.infer<T> {
  const parsed = schema.safeParse(raw, messages)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]
  const where = issue?.path.length ? issue.path.join(".") : code === "invalid_query" ? "query" : "body"
  throw new HttpError(code, `${where}: ${issue?.message ?? "invalid"}`)
}
