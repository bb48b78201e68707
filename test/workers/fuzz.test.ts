// Property-based fuzzing of every route of the worker in workerd (Hono → SQLite Durable Objects): paths, queries,
// headers and bodies, valid-looking and hostile, nesting to 5,000 levels and bodies to 50 MB. No response may be
// a 5xx other than a declared outage, and every error body must match the error schema.
import { env } from "cloudflare:workers"
import fc from "fast-check"
import { SignJWT } from "jose"
import { beforeAll, describe, expect, it } from "vitest"
import { DOCUMENTED_ROUTES } from "../../src/edge/openapi.ts"
import { ErrorResponse } from "../../src/edge/schemas.ts"
import worker from "../../src/edge/worker.ts"

const SECRET = "fuzz-secret-fuzz-secret-fuzz-secret-fuzz"
const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET } as never
const tenant = `fuzz${Date.now().toString(36)}`
const tokens: string[] = []
let total = 0
const statuses = new Map<number, number>()

beforeAll(async () => {
  const key = new TextEncoder().encode(SECRET)
  const sign = (claims: Record<string, unknown>, exp: string | number = "10m") =>
    new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime(exp).sign(key)
  tokens.push(
    await sign({ tenant, scope: "ledger:agent" }),
    await sign({ tenant, scope: "ledger:store" }),
    await sign({ tenant, scope: "ledger:operator ledger:reader" }),
    await sign({ tenant, scope: "ledger:agent ledger:store ledger:operator" }),
    await sign({ tenant: "../../etc", scope: "ledger:agent" }),
    await sign({ tenant, scope: "ledger:agent" }, Math.floor(Date.now() / 1000) - 60),
  )
})

async function send(req: Request): Promise<void> {
  const res = await worker.fetch(req, bindings, {})
  total++
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
  const text = req.method === "HEAD" ? "" : await res.text()
  expect(res.status, `${req.method} ${req.url} → ${res.status} ${text.slice(0, 300)}`).toBeLessThan(500)
  if (res.status >= 400 && req.method !== "HEAD") {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    expect(ErrorResponse.safeParse(json).success, `${req.method} ${req.url}: ${text.slice(0, 300)}`).toBe(
      true,
    )
  }
}

const nested = (depth: number, leaf: string) => `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}`
const nestedObj = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`

const idArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("%", "%E0%A4%A", "..%2F..", "%00", "a%2Fb", "x".repeat(600), "send_payment:order-1", "%ZZ"),
  fc.stringMatching(/^[a-f0-9]{64}$/),
)
const routeArb = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .tuple(fc.constantFrom(...DOCUMENTED_ROUTES), idArb)
      .map(
        ([r, id]) =>
          [
            r.method.toUpperCase(),
            r.path.replace("{id}", /%|\//.test(id) ? id : encodeURIComponent(id)),
          ] as const,
      ),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"),
      fc.oneof(
        fc
          .array(fc.string({ maxLength: 12 }), { maxLength: 5 })
          .map((segs) => `/${segs.map(encodeURIComponent).join("/")}`),
        fc.constantFrom("/v1", "/v1/", "/v1/calls/", "//v1//calls", "/v1/rows/a/b/c", "/v1/transitions/%"),
        fc.constantFrom(...DOCUMENTED_ROUTES.map((r) => r.path.replace("{id}", "x"))),
      ),
    ),
  },
)
const queryArb = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom("limit", "cursor", "outcome", "tool", "stuck", "prefix"),
        fc.string({ maxLength: 8 }),
      ),
      fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom("0", "-1", "1e9", "500", "501", "COMPLETED", "true", "NaN", ""),
      ),
    ),
    { maxLength: 4 },
  )
  .map((pairs) =>
    pairs.length
      ? `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`
      : "",
  )

const jsonish = fc.jsonValue({ maxDepth: 4 })
const held = fc.record(
  { fence: fc.oneof(fc.integer(), fc.double()), lease: fc.string({ minLength: 0, maxLength: 80 }) },
  { requiredKeys: [] },
)
const bodyObject = fc.oneof(
  fc.record(
    {
      tool: fc.oneof(fc.string({ maxLength: 30 }), fc.constant("send_payment")),
      args: fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), jsonish, { maxKeys: 4 }), jsonish),
      binding: fc.record(
        {
          agent_id: fc.string({ maxLength: 10 }),
          policy_version: fc.string({ maxLength: 10 }),
          side_effect_class: fc.oneof(
            fc.constantFrom("read", "keyed_mutate", "non_idempotent_mutate", "payment", "bogus"),
            fc.string({ maxLength: 10 }),
          ),
          capability: fc.string({ maxLength: 10 }),
          retry_permission: fc.string({ maxLength: 10 }),
          scope_from: fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
          request_id_from: fc.string({ maxLength: 8 }),
          provider_idempotency_key_ttl: fc.double(),
        },
        { requiredKeys: [] },
      ),
      meta: fc.record(
        {
          request_id: fc.oneof(idArb, fc.constant("  ")),
          tool_call_id: idArb,
          thread_id: fc.string({ maxLength: 10 }),
        },
        { requiredKeys: [] },
      ),
      lease_ttl: fc.oneof(fc.double(), fc.integer()),
      now: fc.double(),
    },
    { requiredKeys: [] },
  ),
  fc
    .tuple(
      held,
      fc.record(
        { result: jsonish, error: fc.string(), boundary: fc.string({ maxLength: 15 }) },
        { requiredKeys: [] },
      ),
    )
    .map(([a, b]) => ({ ...a, ...b })),
  fc.record(
    {
      verified: fc.constantFrom("completed", "not_executed", "x"),
      reason: fc.string(),
      by: fc.string(),
      result: jsonish,
      override_heartbeat: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      entry: fc.record(
        {
          request_id: idArb,
          tool: fc.string(),
          status: fc.string(),
          terminal_outcome: fc.string(),
          fence: jsonish,
        },
        { requiredKeys: [] },
      ),
      row: fc.record(
        { request_id: idArb, tool: fc.string(), status: fc.string(), result: jsonish },
        { requiredKeys: [] },
      ),
      next: fc.record({ request_id: idArb, tool: fc.string(), status: fc.string() }, { requiredKeys: [] }),
      expect: fc.record(
        { outcomes: fc.array(fc.string()), fence: jsonish, lease_held_at: fc.double() },
        { requiredKeys: [] },
      ),
      lease_ttl: fc.double(),
      reclaim_fence: jsonish,
      dispatch_id: fc.string(),
    },
    { requiredKeys: [] },
  ),
  jsonish,
)
const bodyArb = fc.oneof(
  { weight: 6, arbitrary: bodyObject.map((o) => JSON.stringify(o)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 5000 }).map((d) => `{"tool":"t","args":{"x":${nested(d, "1")}}}`),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5000 }).map((d) => nestedObj(d)) },
  { weight: 1, arbitrary: fc.constant(undefined) },
)
const headerArb = fc.record({
  // 80% valid tokens of each kind (agent, store, operator, all, bad tenant, expired), the rest hostile.
  auth: fc
    .tuple(fc.nat({ max: 99 }), fc.string({ maxLength: 30 }))
    .map(([n, junk]) =>
      n < 80 ? `Bearer ${tokens[n % 4 === 3 ? (n % 3) + 3 : n % 4]}` : n < 90 ? junk : undefined,
    ),
  type: fc.oneof(
    fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "APPLICATION/JSON",
      "application/jsonx",
    ),
    fc.string({ maxLength: 20 }),
    fc.constant(undefined),
  ),
  origin: fc.option(fc.constantFrom("https://evil.example", "null")),
})

describe("fuzzing the worker in workerd", () => {
  it("10,000 requests over every route: no 5xx, every error body matches the schema", async () => {
    await fc.assert(
      fc.asyncProperty(routeArb, queryArb, headerArb, bodyArb, async ([method, path], query, h, body) => {
        const headers: Record<string, string> = {}
        if (h.auth !== undefined) headers.authorization = h.auth
        if (h.type !== undefined) headers["content-type"] = h.type
        if (h.origin) headers.origin = h.origin
        const withBody = body !== undefined && method !== "GET" && method !== "HEAD"
        await send(
          new Request(`http://edge.test${path}${query}`, {
            method,
            headers,
            ...(withBody ? { body } : {}),
          }),
        )
      }),
      { numRuns: 10_000, seed: 20260712 },
    )
    console.log(
      `fuzz: ${total} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
    )
    expect(total).toBeGreaterThanOrEqual(10_000)
  }, 240_000)

  it("bodies to 50 MB (declared and streamed) and nesting to 5,000 on every POST/PUT route: 413/400, never read whole", async () => {
    const token = `Bearer ${tokens[3]}`
    const writes = DOCUMENTED_ROUTES.filter((r) => r.method !== "get").map(
      (r) => [r.method.toUpperCase(), r.path.replace("{id}", "x")] as const,
    )
    for (const [method, path] of writes) {
      for (const mb of [2, 50]) {
        const big = "x".repeat(mb * 1024 * 1024)
        await send(
          new Request(`http://edge.test${path}`, {
            method,
            headers: { authorization: token, "content-type": "application/json" },
            body: big,
          }),
        )
        let sent = 0
        const stream = new ReadableStream<Uint8Array>({
          pull(c) {
            sent += 64 * 1024
            if (sent > mb * 1024 * 1024) c.close()
            else c.enqueue(new Uint8Array(64 * 1024).fill(32))
          },
        })
        await send(
          new Request(`http://edge.test${path}`, {
            method,
            headers: { authorization: token, "content-type": "application/json" },
            body: stream,
          }),
        )
        expect(sent, `${method} ${path} streamed`).toBeLessThan(2 * 1024 * 1024)
      }
      for (const d of [129, 1000, 1200, 5000]) {
        await send(
          new Request(`http://edge.test${path}`, {
            method,
            headers: { authorization: token, "content-type": "application/json" },
            body: `{"result":${nested(d, "1")}}`,
          }),
        )
      }
    }
  }, 120_000)
})
