// GET /openapi.json: OpenAPI 3.1 built from the zod schemas the routes validate with.
import * as z from "zod/mini"
import * as S from "./schemas.ts"

type Scope = "agent" | "reader" | "operator" | "store" | null

interface RouteDoc {
  readonly method: "get" | "post" | "put"
  readonly path: string
  readonly scope: Scope
  readonly summary: string
  readonly body?: z.ZodMiniType
  readonly query?: z.ZodMiniObject
  readonly response?: z.ZodMiniType
}

const ROUTES: readonly RouteDoc[] = [
  { method: "get", path: "/health", scope: null, summary: "Liveness." },
  { method: "get", path: "/openapi.json", scope: null, summary: "This document." },
  { method: "get", path: "/docs", scope: null, summary: "A page describing the API." },
  {
    method: "post",
    path: "/v1/calls",
    scope: "agent",
    summary: "Begin a ledgered call: identity, drift check, gates and claim in one request.",
    body: S.BeginCallBody,
    response: S.BeginCallResponse,
  },
  {
    method: "post",
    path: "/v1/calls/{id}/boundary",
    scope: "agent",
    summary: "Advance the boundary and/or attach the provider's operation reference.",
    body: S.BoundaryBody,
    response: S.CallStateResponse,
  },
  {
    method: "post",
    path: "/v1/calls/{id}/complete",
    scope: "agent",
    summary: "Complete a held call with its result (or as unstorable).",
    body: S.CompleteBody,
    response: S.CallStateResponse,
  },
  {
    method: "post",
    path: "/v1/calls/{id}/fail",
    scope: "agent",
    summary: "Fail a held call (its stored boundary decides the outcome).",
    body: S.FailBody,
    response: S.CallStateResponse,
  },
  {
    method: "post",
    path: "/v1/calls/{id}/renew",
    scope: "agent",
    summary: "Renew a held lease.",
    body: S.RenewBody,
    response: S.RenewResponse,
  },
  {
    method: "get",
    path: "/v1/transitions",
    scope: "reader",
    summary: "List transitions, one page at a time in request-id order.",
    query: S.TransitionsQuery,
  },
  { method: "get", path: "/v1/transitions/{id}", scope: "reader", summary: "Show one transition." },
  {
    method: "post",
    path: "/v1/transitions/{id}/release",
    scope: "operator",
    summary: "An operator's one-shot verdict on an ambiguous transition.",
    body: S.ReleaseBody,
  },
  {
    method: "post",
    path: "/v1/transitions/{id}/mark-worker-dead",
    scope: "operator",
    summary: "Assert the worker holding a transition is dead.",
    body: S.MarkDeadBody,
  },
  { method: "get", path: "/v1/rows", scope: "store", summary: "Raw rows, paginated.", query: S.RowsQuery },
  { method: "get", path: "/v1/rows/{id}", scope: "store", summary: "Raw row." },
  { method: "put", path: "/v1/rows/{id}", scope: "store", summary: "Upsert a raw row.", body: S.PutRowBody },
  {
    method: "post",
    path: "/v1/rows/{id}/claim",
    scope: "store",
    summary: "Storage claim (server clock).",
    body: S.ClaimRowBody,
  },
  {
    method: "post",
    path: "/v1/rows/{id}/transition",
    scope: "store",
    summary: "Storage compare-and-set.",
    body: S.TransitionRowBody,
  },
  { method: "get", path: "/v1/dispatch/{id}", scope: "store", summary: "Rows claimed under a dispatch id." },
  {
    method: "get",
    path: "/v1/receipts",
    scope: "reader",
    summary:
      "A page of the tenant's audit receipts; format=jsonl answers JSON lines that verify offline, the next page in a Link header.",
    query: S.ReceiptsQuery,
  },
  {
    method: "post",
    path: "/v1/receipts/verify",
    scope: "reader",
    summary: "Verify the tenant's receipts: signatures, payload hashes and hash chains.",
    query: S.ReceiptsFilterQuery,
    body: S.VerifyReceiptsBody,
  },
]

/** The route list, for tests that check every route is documented and fuzzed. */
export const DOCUMENTED_ROUTES: ReadonlyArray<{ method: string; path: string; scope: Scope }> = ROUTES

const schema = (s: z.ZodMiniType) =>
  z.toJSONSchema(s, { target: "draft-2020-12", unrepresentable: "any", io: "input" })

const json = (s: z.ZodMiniType) => ({ "application/json": { schema: schema(s) } })

let cached: Record<string, unknown> | null = null

/** The OpenAPI 3.1 document. Built once, on first request. */
export function openApiDocument(): Record<string, unknown> {
  if (cached) return cached
  const errorRef = { $ref: "#/components/schemas/Error" }
  const errorResponses = {
    "400": { description: "Invalid input", content: { "application/json": { schema: errorRef } } },
    "401": { description: "Missing or invalid token", content: { "application/json": { schema: errorRef } } },
    "403": { description: "Token lacks the scope", content: { "application/json": { schema: errorRef } } },
    "404": { description: "Unknown id or route", content: { "application/json": { schema: errorRef } } },
    "409": {
      description: "Refused by the ledger's state",
      content: { "application/json": { schema: errorRef } },
    },
    "413": { description: "Body or row too large", content: { "application/json": { schema: errorRef } } },
    "415": {
      description: "Body is not application/json",
      content: { "application/json": { schema: errorRef } },
    },
    "503": {
      description: "Storage or key set unavailable",
      content: { "application/json": { schema: errorRef } },
    },
  }
  const paths: Record<string, Record<string, unknown>> = {}
  for (const r of ROUTES) {
    const parameters: unknown[] = []
    if (r.path.includes("{id}"))
      parameters.push({ name: "id", in: "path", required: true, schema: { type: "string", maxLength: 512 } })
    if (r.query) {
      for (const [name, s] of Object.entries(r.query.shape))
        parameters.push({ name, in: "query", required: false, schema: schema(s as z.ZodMiniType) })
    }
    const op: Record<string, unknown> = {
      summary: r.summary,
      operationId: `${r.method}${r.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, ch: string | undefined) => (ch ?? "").toUpperCase())}`,
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: true, content: json(r.body) } } : {}),
      ...(r.scope ? { security: [{ bearer: [`ledger:${r.scope}`] }] } : { security: [] }),
      responses: {
        "200": { description: "OK", ...(r.response ? { content: json(r.response) } : {}) },
        ...errorResponses,
      },
    }
    paths[r.path] = { ...paths[r.path], [r.method]: op }
  }
  cached = {
    openapi: "3.1.0",
    info: {
      title: "mycelium-runtime ledger API",
      version: "1",
      description:
        "Exactly-once tool calls over HTTP. Agents (ledger:agent) run calls through /v1/calls; readers list, operators release; /v1/rows is for trusted backends (ledger:store).",
    },
    paths,
    components: {
      schemas: { Error: schema(S.ErrorResponse) },
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
    },
  }
  return cached
}

export const DOCS_HTML = `<!doctype html><meta charset="utf-8"><title>mycelium ledger API</title>
<style>body{font:15px/1.5 system-ui;max-width:46rem;margin:2rem auto;padding:0 1rem}code{background:#eee;padding:0 .2em}</style>
<h1>mycelium ledger API</h1>
<p>Exactly-once tool calls over HTTP. The machine-readable contract is <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p>
<ul>
<li><code>ledger:agent</code> tokens run calls: <code>POST /v1/calls</code> answers <code>run</code> (with a secret lease and a fence), <code>replay</code>, <code>poll</code> or <code>blocked</code>; the holder then calls <code>boundary</code>, <code>complete</code>, <code>fail</code> or <code>renew</code> on <code>/v1/calls/{id}/…</code>.</li>
<li><code>ledger:reader</code> lists (<code>GET /v1/transitions</code>, paginated) and shows transitions; <code>ledger:operator</code> releases and marks workers dead.</li>
<li><code>ledger:store</code> is for trusted backends only: the raw storage routes under <code>/v1/rows</code>.</li>
</ul>
<p>Every error is <code>{"error":{"code","message"}}</code> with a stable code; bodies are JSON, at most 1 MiB and 128 levels deep by default.</p>`
