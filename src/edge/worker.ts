// The Cloudflare Worker entry (wrangler.toml `main`): the ledger API over per-tenant Durable Objects.
// Auth: set the secret LEDGER_JWT_SECRET (HS256) or the var LEDGER_JWKS_URL; for local `wrangler dev` only,
// MYCELIUM_ALLOW_UNAUTHENTICATED = "true" serves everyone as tenant "default".
import type { Hono } from "hono"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../adapters/durable-object.ts"
import { InvalidOptionError } from "../core/errors.ts"
import { createLedgerApp } from "./app.ts"
import { type JwtAuthOptions, jwtAuth } from "./auth.ts"
import { errorResponse } from "./status.ts"
import { workerReceipts } from "./worker-receipts.ts"

export { MyceliumLedgerObject } from "../adapters/durable-object.ts"

export interface LedgerWorkerEnv {
  readonly LEDGER: LedgerObjectNamespace
  readonly LEDGER_JWT_SECRET?: string
  readonly LEDGER_JWKS_URL?: string
  readonly LEDGER_JWT_ISSUER?: string
  readonly LEDGER_JWT_AUDIENCE?: string
  /** Refuse tokens issued more than this many seconds ago. Default: no maximum (exp still required). */
  readonly LEDGER_JWT_MAX_AGE?: string
  /** Comma-separated browser origins allowed to call the API (CORS). Default none. */
  readonly LEDGER_CORS_ORIGINS?: string
  /** Shards per tenant: a hot tenant spreads its rows over this many objects. Default 1. */
  readonly LEDGER_SHARDS?: string
  readonly MYCELIUM_ALLOW_UNAUTHENTICATED?: string
  /** A private Ed25519 or P-256 JWK with a `kid` (a secret): each tenant's outcomes and releases are signed receipts. */
  readonly LEDGER_RECEIPT_JWK?: string
}

// Built on the first request (bindings exist only inside a handler), once: the requests that arrive while it builds
// wait for the same build. Each build has its own tenant cache, and 3 concurrent cold requests built 3, so one
// tenant had 3 ledgers in the isolate at once (queues and leases split).
let built: { readonly env: LedgerWorkerEnv; readonly app: Promise<Hono> } | null = null

// Rebuilt when the bindings object changes (tests, config reloads); cheap, and never stale.
function appFor(env: LedgerWorkerEnv): Promise<Hono> {
  if (built?.env === env) return built.app
  const entry = { env, app: build(env) }
  built = entry
  // A failed build is not kept: the next request builds again (a fault that passed, a secret set since). Logged
  // once, not by each request that waited for it; an option check's message is the answer, not a fault.
  entry.app.catch((e: unknown) => {
    if (built === entry) built = null
    if (!(e instanceof InvalidOptionError)) console.error("[mycelium] worker build failed:", e)
  })
  return entry.app
}

// Decimal digits only, else misconfigured: a shard count read wrong hides the tenant's rows (a finished call runs
// again), and an age limit read wrong is no limit at all. Number() would also take "0x10", "1e3" or "".
function positiveInt(env: LedgerWorkerEnv, name: "LEDGER_SHARDS" | "LEDGER_JWT_MAX_AGE"): number | undefined {
  const value = env[name]
  if (value === undefined) return undefined
  if (/^\d{1,15}$/.test(value) && Number(value) > 0) return Number(value)
  throw new InvalidOptionError(
    `${name} must be a positive whole number in decimal digits ("4", or "3600" for an hour): correct or unset it`,
  )
}

// Every list waits on every shard, and each shard read is a subrequest (Workers Paid allows 10,000 per request, Free
// 50): 256 keeps a list to a few hundred calls with room for many pages. 5000 shards took 75 s to fail one list,
// 10^8 never answered and 2^32 overflowed the id array.
const MAX_SHARDS = 256

async function build(env: LedgerWorkerEnv): Promise<Hono> {
  // Checked here, not on the first call: a renamed or missing binding was a 500 on every call while /health said ok.
  const ns = env.LEDGER as Partial<LedgerObjectNamespace> | undefined
  if (typeof ns?.idFromName !== "function" || typeof ns.get !== "function")
    throw new InvalidOptionError(
      'LEDGER must be a Durable Object binding of class MyceliumLedgerObject: add [[durable_objects.bindings]] name = "LEDGER" to wrangler.toml',
    )
  const shards = positiveInt(env, "LEDGER_SHARDS") ?? 1
  if (shards > MAX_SHARDS)
    throw new InvalidOptionError(
      `LEDGER_SHARDS must be at most ${MAX_SHARDS} (every list reads every shard): lower it`,
    )
  const maxTokenAge = positiveInt(env, "LEDGER_JWT_MAX_AGE")
  const storage = (tenant: string) =>
    new DurableObjectLedgerStorage(env.LEDGER, { name: `tenant:${tenant}`, shards })
  const verify = {
    ...(env.LEDGER_JWT_ISSUER ? { issuer: env.LEDGER_JWT_ISSUER } : {}),
    ...(env.LEDGER_JWT_AUDIENCE ? { audience: env.LEDGER_JWT_AUDIENCE } : {}),
    ...(maxTokenAge ? { maxTokenAge } : {}),
  }
  const origins = (env.LEDGER_CORS_ORIGINS ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean)
  const receipts = env.LEDGER_RECEIPT_JWK ? await workerReceipts(env.LEDGER, env.LEDGER_RECEIPT_JWK) : null
  const common = {
    storage,
    // Each tenant's rows live in its Durable Objects: a tenant not seen lately is cheap to build again, and an
    // isolate that kept every tenant it ever served grew without end.
    maxCachedTenants: 1000,
    ...(origins.length ? { corsOrigins: origins } : {}),
    ...(receipts ? { receipts } : {}),
  }
  // jwtAuth's message names its option; the operator knows the variable (its value is never echoed).
  const auth = (o: JwtAuthOptions, fix: string) => {
    let authenticate: ReturnType<typeof jwtAuth>
    try {
      authenticate = jwtAuth({ ...o, ...verify })
    } catch {
      throw new InvalidOptionError(fix)
    }
    return createLedgerApp({ ...common, authenticate }) as unknown as Hono
  }
  if (env.LEDGER_JWT_SECRET)
    return auth(
      { secret: env.LEDGER_JWT_SECRET },
      "LEDGER_JWT_SECRET must be at least 32 bytes (RFC 7518): set a random one, e.g. `openssl rand -base64 32 | npx wrangler secret put LEDGER_JWT_SECRET`",
    )
  if (env.LEDGER_JWKS_URL)
    return auth(
      { jwksUrl: env.LEDGER_JWKS_URL },
      "LEDGER_JWKS_URL must be the absolute http(s) URL of your issuer's key set (https://issuer.example/.well-known/jwks.json): correct it",
    )
  if (env.MYCELIUM_ALLOW_UNAUTHENTICATED === "true") return createLedgerApp(common) as unknown as Hono
  throw new InvalidOptionError(
    "configure LEDGER_JWT_SECRET or LEDGER_JWKS_URL (or MYCELIUM_ALLOW_UNAUTHENTICATED=true for local dev)",
  )
}

export default {
  async fetch(request: Request, env: LedgerWorkerEnv, ctx: unknown): Promise<Response> {
    let app: Hono
    try {
      app = await appFor(env)
    } catch (e) {
      // An option check's message names the variable, never its value; anything else (a bug, a platform fault) is
      // answered as the app answers it: by its code, or 500 internal_error without its text or stack.
      if (e instanceof InvalidOptionError)
        return Response.json({ error: { code: "misconfigured", message: e.message } }, { status: 503 })
      const { status, body } = errorResponse(e)
      return Response.json(body, { status })
    }
    return await app.fetch(request, env, ctx as never)
  },
}
