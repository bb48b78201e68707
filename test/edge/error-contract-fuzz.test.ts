// The error contract under thousands of malformed requests, in process (app.request()): wrong methods, media types,
// charsets, bodies (invalid JSON, deep, huge numbers, lone surrogates, __proto__ keys, wrong types for every field
// of every route's schema), headers and path ids. Every answer is < 500; every error is JSON with one stable
// snake_case code, at the status the code table gives, without a stack or a secret; the token's scope decides every
// route; the media type, size and depth are refused before the schema; and a refused request changes no row and
// appends no receipt. A small seeded generator: a run repeats exactly, and a failure names its request number.
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { seededRandom } from "../../src/conformance/random.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { nestsDeeper } from "../../src/edge/body.ts"
import { createLedgerApp, DOCUMENTED_ROUTES, jwtAuth } from "../../src/edge/index.ts"
import { ErrorResponse } from "../../src/edge/schemas.ts"
import { HTTP_STATUS_BY_CODE, statusForCode } from "../../src/edge/status.ts"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "../../src/receipts.ts"

const SECRET = "error-contract-fuzz-secret-0123456789abcdef"
const key = new TextEncoder().encode(SECRET)
const MAX_BYTES = 16 * 1024
const MAX_DEPTH = 32
const SEED = 20261206
const REQUESTS = 10_000
const BATCH = 60

// ---- draws from the conformance suite's seeded generator (a failing run repeats from SEED) ------------------

type Rng = () => number
const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1))
const pick = <T>(r: Rng, list: readonly T[]): T => list[Math.floor(r() * list.length)] as T
const chance = (r: Rng, p: number) => r() < p

// ---- tokens -------------------------------------------------------------------------------------------------

type Scope = "agent" | "reader" | "operator" | "store"
/** What a header should get on a /v1 route: refused (401/403 regardless of scope) or these scopes. */
type Grant =
  | { kind: "unauthorized" }
  | { kind: "bad_tenant" }
  | { kind: "scopes"; scopes: ReadonlySet<Scope> }
interface Auth {
  readonly header: string | undefined
  readonly grant: Grant
  /** Sent in the query instead (a token there is never read). */
  readonly query?: string
}

const now = () => Math.floor(Date.now() / 1000)
const sign = (claims: Record<string, unknown>, header: Record<string, unknown> = { alg: "HS256" }) =>
  new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key)

async function tokens(): Promise<Auth[]> {
  const exp = now() + 600
  const scoped = async (scope: unknown, scopes: Scope[], extra: Record<string, unknown> = {}) => ({
    header: `Bearer ${await sign({ tenant: "t", scope, exp, sub: "fuzz", ...extra })}`,
    grant: { kind: "scopes", scopes: new Set(scopes) } as Grant,
  })
  const all = await sign({
    tenant: "t",
    scope: "ledger:agent ledger:reader ledger:operator ledger:store",
    exp,
  })
  const unauthorized = (header: string | undefined, query?: string): Auth => ({
    header,
    grant: { kind: "unauthorized" },
    ...(query ? { query } : {}),
  })
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url")
  return [
    await scoped("ledger:agent", ["agent"]),
    await scoped("ledger:reader", ["reader"]),
    await scoped("ledger:operator", ["operator", "reader"]),
    await scoped("ledger:store", ["store"]),
    await scoped("ledger:agent ledger:reader ledger:operator ledger:store", [
      "agent",
      "reader",
      "operator",
      "store",
    ]),
    await scoped(["ledger:agent", 5, null, "ledger:store"], ["agent", "store"]),
    // Bare, foreign, NBSP-separated, doubled-space and case-changed scopes grant nothing more.
    await scoped("store operator agent", []),
    await scoped("ledger:agent\u00a0ledger:store", []),
    await scoped("ledger:agent  ledger:reader", ["agent", "reader"]),
    await scoped("LEDGER:STORE ledger:Agent", []),
    await scoped(undefined, ["operator", "reader"], { scopes: "ledger:operator" }),
    await scoped("", []),
    {
      header: `bearer   ${all}`,
      grant: { kind: "scopes", scopes: new Set(["agent", "reader", "operator", "store"]) },
    },
    unauthorized(undefined),
    unauthorized(undefined, all),
    unauthorized(""),
    unauthorized("Bearer"),
    unauthorized("Bearer "),
    unauthorized(`Basic ${Buffer.from("a:b").toString("base64")}`),
    unauthorized(`Bearer ${all}, Bearer ${all}`),
    unauthorized(`Bearer ${all} x`),
    unauthorized(`Token ${all}`),
    unauthorized(`Bearer ${all.slice(0, -2)}`),
    unauthorized(`Bearer ${"a".repeat(9000)}`),
    unauthorized(`Bearer ${b64({ alg: "none" })}.${b64({ tenant: "t", scope: "ledger:store", exp })}.`),
    unauthorized(`Bearer ${b64({ alg: "HS256", crit: ["b64"], b64: false })}.${b64({ tenant: "t", exp })}.x`),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:store" })}`),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:store", exp: now() - 600 })}`),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:store", exp, iat: now() + 3600 })}`),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:operator", exp, sub: "a\u0000b" })}`),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:operator", exp, sub: "\ud800" })}`),
    unauthorized(
      `Bearer ${await new SignJWT({ tenant: "t", scope: "ledger:store", exp })
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode(`${SECRET}-other`))}`,
    ),
    unauthorized(`Bearer ${await sign({ tenant: "t", scope: "ledger:store", exp }, { alg: "HS512" })}x`),
    {
      header: `Bearer ${await sign({ tenant: "../t", scope: "ledger:store", exp })}`,
      grant: { kind: "bad_tenant" },
    },
    {
      header: `Bearer ${await sign({ tenant: 5, scope: "ledger:store", exp })}`,
      grant: { kind: "bad_tenant" },
    },
    { header: `Bearer ${await sign({ scope: "ledger:store", exp })}`, grant: { kind: "bad_tenant" } },
    {
      header: `Bearer ${await sign({ tenant: "t".repeat(129), scope: "ledger:store", exp })}`,
      grant: { kind: "bad_tenant" },
    },
  ]
}

// ---- bodies: JSON text, so that what JavaScript objects cannot hold (1e400, "\ud800", __proto__) is sent -------

type Gen = (r: Rng) => string
const str = (s: string) => JSON.stringify(s)
const long = (n: number) => str("x".repeat(n))
const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`
const HOSTILE: readonly string[] = [
  "null",
  "true",
  "false",
  "0",
  "-0",
  "-1",
  "1.5",
  "1e400",
  "-1e400",
  "1e-400",
  "12345678901234567890123",
  "9007199254740993",
  '""',
  '" "',
  '"x"',
  '"\\u0000"',
  '"a\\ud800"',
  '"\\udc00"',
  '"\\ud83d\\ude00"',
  '"\u202eevil"',
  '"."',
  '".."',
  '"%2e%2e"',
  '"a/b"',
  '"toString"',
  '"__proto__"',
  '"constructor"',
  '"COMPLETED"',
  '"IN_FLIGHT"',
  "[]",
  "[1,2]",
  "{}",
  '{"__proto__":{"x":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '{"toString":1,"valueOf":2}',
  '{"\\u0000":1}',
  '{"\\ud800":1}',
  long(513),
  long(5000),
  deep(MAX_DEPTH - 4),
]
const hostile: Gen = (r) => pick(r, HOSTILE)
const constant =
  (...values: string[]): Gen =>
  (r) =>
    pick(r, values)

/** An object of `fields`, each sent valid, hostile or not at all, with unknown and repeated keys now and then. */
const obj =
  (fields: Record<string, Gen>): Gen =>
  (r) => {
    const parts: string[] = []
    for (const [k, valid] of Object.entries(fields)) {
      if (chance(r, 0.15)) continue
      parts.push(`${str(k)}:${chance(r, 0.85) ? valid(r) : hostile(r)}`)
      if (chance(r, 0.02)) parts.push(`${str(k)}:${hostile(r)}`)
    }
    if (chance(r, 0.08))
      parts.push(
        `${str(pick(r, ["now", "extra", "__proto__", "constructor", "", "\u0000", "x".repeat(600)]))}:${hostile(r)}`,
      )
    return `{${parts.join(",")}}`
  }

const ENUM = {
  outcome: [
    "IN_FLIGHT",
    "COMPLETED",
    "FAILED_BEFORE_EFFECT",
    "FAILED_AFTER_EFFECT",
    "UNKNOWN",
    "BLOCKED",
    "EXPIRED",
  ],
  boundary: ["not_crossed", "maybe_crossed", "crossed"],
  phase: ["INTENDED", "DISPATCHED", "ACKED", "COMMITTED"],
  klass: ["read", "idempotent_mutate", "keyed_mutate", "non_idempotent_mutate", "irreversible", "bogus"],
}
const e = (list: readonly string[]): Gen => constant(...list.map(str))
const anyJson: Gen = (r) =>
  pick(r, ['{"id":"pi_1"}', "1", '"ok"', "[1,2,3]", "null", '{"a":{"b":[true,null]}}', hostile(r)])

interface World {
  ids: string[]
  leases: string[]
}

function bodies(w: World): Record<string, Gen> {
  const id: Gen = (r) => str(pick(r, w.ids))
  // The held call's own lease half the time, so that holder routes get past the lease check.
  const lease: Gen = (r) => str(chance(r, 0.5) ? (w.leases[0] as string) : pick(r, w.leases))
  const fence = constant("1", "1", "1", "2", "0", "-1", "1.5", '"1"')
  const row: Gen = (r) =>
    obj({
      request_id: id,
      tool: constant('"pay"', '"t"'),
      status: constant('"in-flight"', '"completed"', '"failed"'),
      terminal_outcome: e(ENUM.outcome),
      fence,
      lease_until: constant("null", String(now() + 60), String(now() - 60)),
      owner: constant("null", '"edge-api"'),
      result: anyJson,
      side_effect_boundary: e(ENUM.boundary),
      effect_phase: e(ENUM.phase),
    })(r)
  const held = { fence, lease }
  return {
    "post /v1/calls": obj({
      tool: constant('"pay"', '"t"', '""', str("t".repeat(201))),
      args: constant(
        '{"amount":100}',
        "{}",
        '{"n":12345678901234567890}',
        '{"a":1e5}',
        '{"x":[1,{"y":null}]}',
      ),
      binding: obj({
        agent_id: constant('"pay"', '""'),
        policy_version: constant('"1"'),
        side_effect_class: e(ENUM.klass),
        scope_from: obj({ thread_id: constant('"th"'), run_id: constant('"r"'), node: constant('"n"') }),
        retry_permission: constant('"never"', '"bogus"'),
        side_effect_boundary_default: e(ENUM.boundary),
        spendability: constant('"spendable"', '"bogus"'),
        capability: constant('"idempotent"', '"queryable"', '"blind"'),
        provider_idempotency_key_param: constant('"key"'),
        provider_idempotency_key_ttl: constant("60", "0", "1e308"),
        request_id_from: constant('"amount"', '"order"', '"toString"'),
      }),
      meta: obj({ request_id: id, tool_call_id: id, thread_id: constant('"th"'), run_id: constant('"r"') }),
      lease_ttl: constant("30", "0", "-1", "1e-320", "86400"),
    }),
    "post /v1/calls/{id}/boundary": obj({
      ...held,
      boundary: constant('"maybe_crossed"', '"crossed"', '"not_crossed"'),
      external_operation_ref: constant('"op_1"', '""'),
    }),
    "post /v1/calls/{id}/complete": (r) =>
      chance(r, 0.8)
        ? obj({ ...held, result: anyJson })(r)
        : obj({
            ...held,
            unstorable: obj({
              limit: constant('"max_depth"', '"max_row_bytes"', '"not_serializable"', '"other"'),
              message: constant('"too big"', '""'),
            }),
          })(r),
    "post /v1/calls/{id}/fail": obj({
      ...held,
      error: constant('"boom"', long(5000)),
      boundary: e(ENUM.boundary),
    }),
    "post /v1/calls/{id}/renew": obj({ ...held, lease_ttl: constant("30", "0", "1e9") }),
    "post /v1/transitions/{id}/release": obj({
      verified: constant('"completed"', '"not_executed"', '"maybe"'),
      reason: constant('"checked the provider"', '"   "'),
      by: constant('"ops"', '""'),
      result: anyJson,
      override_death_signal: constant('"host gone"'),
      expected_fence: constant("0", "1", "2", "-1"),
      force: constant("true", "false"),
    }),
    "post /v1/transitions/{id}/mark-worker-dead": obj({
      reason: constant('"host gone"', '""'),
      by: constant('"ops"'),
      override_heartbeat: constant("true", "false"),
      expected_fence: constant("0", "1", "2"),
    }),
    "put /v1/rows/{id}": obj({ row }),
    "post /v1/rows/{id}/claim": obj({
      entry: row,
      lease_ttl: constant("30", "0", "-5", "1e9"),
      now: constant("1"),
      reclaim_fence: constant("null", "1", "2"),
      dispatch_id: constant('"d1"'),
    }),
    "post /v1/rows/{id}/transition": obj({
      next: row,
      expect: obj({
        outcomes: (r) => `[${e(ENUM.outcome)(r)}]`,
        owner: constant("null", '"edge-api"'),
        fence,
        effect_phase: e(ENUM.phase),
        side_effect_boundary: e(ENUM.boundary),
        lease_held_at: constant("1"),
      }),
    }),
    "post /v1/receipts/verify": obj({
      require_chain: constant("true", "false"),
      allow_unchained: constant("true", "false"),
      heads: constant("{}", '{"t":{"seq":0,"digest":"x"}}', '{"constructor":{"seq":1,"digest":"y"}}'),
    }),
  }
}

/** A whole body: the route's object mostly; else no object at all, broken JSON, too big or too deep. */
function bodyText(r: Rng, gen: Gen | undefined): string | Uint8Array<ArrayBuffer> | undefined {
  const n = r()
  if (n < 0.7 && gen) return gen(r)
  if (n < 0.78)
    return pick(r, [
      "",
      "[]",
      "null",
      "1",
      '"x"',
      "{",
      '{"a":1,}',
      "{'a':1}",
      "\ufeff{}",
      "{}garbage",
      "NaN",
      hostile(r),
    ])
  if (n < 0.84) return `{"tool":"pay","args":{"pad":${long(MAX_BYTES + int(r, -64, 64))}}}`
  if (n < 0.9) return `{"result":${deep(MAX_DEPTH + int(r, -2, 8))},"fence":1}`
  if (n < 0.95) {
    // Invalid UTF-8 (a lone continuation byte, an encoded surrogate, an overlong slash) inside a body.
    const text = new TextEncoder().encode(gen ? gen(r) : "{}")
    const bad = pick(r, [[0xff], [0x80], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]])
    const at = int(r, 0, text.length)
    return new Uint8Array([...text.slice(0, at), ...bad, ...text.slice(at)])
  }
  return undefined
}

// ---- paths, queries, headers --------------------------------------------------------------------------------

/** Path ids: [as it goes in the URL, whether it is a valid id that reaches the route's handler unchanged]. */
function pathId(r: Rng, w: World): [string, boolean] {
  if (chance(r, 0.6)) return [encodeURIComponent(pick(r, w.ids)), true]
  return pick(r, [
    ["a%2Fb", true],
    [encodeURIComponent("é".repeat(300)), true],
    [encodeURIComponent("🙂"), true],
    ["x".repeat(512), true],
    ["x".repeat(513), false],
    ["x".repeat(5000), false],
    ["%00", false],
    ["a%00b", false],
    ["%ED%A0%80", false],
    ["%E0%A4%A", false],
    ["%ZZ", false],
    ["%", false],
    ["%2e%2e", false],
    ["..", false],
    [".", false],
    ["%2e", false],
    ["a;b", true],
    ["%20", true],
    ["+", true],
    ["a%3Fb", true],
    ["a%23b", true],
    ["", false],
  ] as [string, boolean][])
}

const QUERY_KEYS = ["limit", "cursor", "outcome", "tool", "stuck", "prefix", "format", "agent_id", "ledger"]
const QUERY_VALUES = [
  "",
  "0",
  "1",
  "-1",
  "500",
  "501",
  "9999",
  "10000",
  "1e3",
  "NaN",
  "true",
  "COMPLETED",
  "jsonl",
  "1.5",
]
function query(r: Rng, auth: Auth): string {
  const pairs: string[] = []
  if (auth.query) pairs.push(`${pick(r, ["access_token", "token", "authorization"])}=${auth.query}`)
  if (chance(r, 0.5)) {
    for (let i = int(r, 1, 4); i > 0; i--) {
      const k = chance(r, 0.8)
        ? pick(r, QUERY_KEYS)
        : pick(r, ["__proto__", "constructor", "x", "%00", "%ED%A0%80"])
      const v = chance(r, 0.7)
        ? encodeURIComponent(pick(r, QUERY_VALUES))
        : pick(r, [
            "%00",
            "%ED%A0%80",
            "%ZZ",
            "%",
            encodeURIComponent("é".repeat(300)),
            "x".repeat(600),
            "a&b=c",
          ])
      pairs.push(`${k}=${v}`)
    }
  }
  return pairs.length ? `?${pairs.join("&")}` : ""
}

const TYPES = [
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "APPLICATION/JSON",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "application/json , text/plain",
  "application/jsonx",
  "application/json-patch+json",
  "text/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "",
]

// ---- one request, checked ----------------------------------------------------------------------------------

const JSON_TYPE = /^application\/json\s*(;|$)/i

interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  body: string | Uint8Array<ArrayBuffer> | undefined
  /** The documented route it names, when its id reaches the handler as sent. */
  route: (typeof DOCUMENTED_ROUTES)[number] | null
  auth: Auth
  hasQuery: boolean
}

/** The answer the gates (auth, scope, media type, size, depth) must give, in that order, or null: past them. */
function gate(s: Sent): [number, string] | null {
  const route = s.route
  if (!route?.scope) return null
  if (s.auth.grant.kind === "unauthorized") return [401, "unauthorized"]
  if (s.auth.grant.kind === "bad_tenant") return [403, "forbidden"]
  if (!s.auth.grant.scopes.has(route.scope)) return [403, "forbidden"]
  if (route.method === "get") return null
  // The query of verify is read before its body.
  if (route.path === "/v1/receipts/verify" && s.hasQuery) return null
  if (!JSON_TYPE.test(s.headers["content-type"] ?? "")) return [415, "unsupported_media_type"]
  const declared = s.headers["content-length"]
  const bytes = typeof s.body === "string" ? new TextEncoder().encode(s.body) : (s.body ?? new Uint8Array(0))
  if (declared !== undefined && (!/^\d{1,16}$/.test(declared) || Number(declared) > MAX_BYTES))
    return [413, "payload_too_large"]
  if (bytes.length > MAX_BYTES) return [413, "payload_too_large"]
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
  } catch {
    return [400, "invalid_json"]
  }
  if (nestsDeeper(text, MAX_DEPTH)) return [400, "too_deep"]
  return null
}

// Codes a caller may meet on this API: the status table's, and every code the docs list for the edge API.
const DOCUMENTED_CODES = new Set([
  ...Object.keys(HTTP_STATUS_BY_CODE),
  "invalid_request_id",
  "args_drift",
  "ledger_outcome_already_set",
  "ledger_stale_fence",
  "ledger_already_resolved",
  "ledger_release_refused",
  "ledger_worker_alive",
  "ledger_result_unstorable",
  "ledger_lease_expired",
  "ledger_row_invalid",
  "ledger_hard_block",
])

const ALL_SCOPES = "ledger:agent ledger:operator ledger:store"

/** A fresh app and store with a held call, a completed one and an UNKNOWN row, so routes meet real rows. */
async function setup() {
  const storage = new MemoryLedgerStorage()
  const store = new MemoryReceiptStore()
  const emitter = new ReceiptEmitter({ signer: hmacReceiptSigner("fuzz-receipt-key"), store, agentId: "t" })
  const app = createLedgerApp({
    storage: (tenant) => (tenant === "t" ? storage : new MemoryLedgerStorage()),
    authenticate: jwtAuth({ secret: SECRET }),
    receipts: () => ({ emitter, keys: { hmac: "fuzz-receipt-key" } }),
    limits: { maxBodyBytes: MAX_BYTES, maxDepth: MAX_DEPTH },
  })
  const all = `Bearer ${await sign({ tenant: "t", scope: ALL_SCOPES, exp: now() + 600 })}`
  const send = async (method: string, path: string, body: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: all, "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    expect(res.status, `setup ${method} ${path}`).toBe(200)
    return (await res.json()) as { lease: string; fence: number }
  }
  const held = await send("POST", "/v1/calls", {
    tool: "pay",
    args: { amount: 1 },
    meta: { request_id: "held-1" },
  })
  const done = await send("POST", "/v1/calls", {
    tool: "pay",
    args: { amount: 2 },
    meta: { request_id: "done-1" },
  })
  await send("POST", "/v1/calls/done-1/complete", {
    fence: done.fence,
    lease: done.lease,
    result: { id: "pi_1" },
  })
  const unknown = {
    request_id: "unknown-1",
    tool: "pay",
    status: "failed",
    terminal_outcome: "UNKNOWN",
    fence: 1,
  }
  await send("PUT", "/v1/rows/unknown-1", { row: unknown })
  const snapshot = async () => {
    const rows: unknown[] = []
    for await (const row of storage.list({ limit: 100_000 })) rows.push(row)
    const receipts = await store.list()
    return JSON.stringify({ rows, receipts: receipts.length }, (_k, v) =>
      typeof v === "bigint" ? `${v}n` : v,
    )
  }
  return { app, snapshot, all, held, done }
}

/** What every answer must be; returns the error code (null on success). */
async function checked(
  app: { request(path: string, init: RequestInit): Response | Promise<Response> },
  snapshot: () => Promise<string>,
  method: string,
  url: string,
  headers: Record<string, string>,
  body: string | Uint8Array<ArrayBuffer> | undefined,
  note: string,
): Promise<{ status: number; code: string | null; where: string }> {
  const before = await snapshot()
  const res = await app.request(url, { method, headers, ...(body !== undefined ? { body } : {}) })
  const text = await res.text()
  const shown = typeof body === "string" ? body.slice(0, 160) : body ? "<bytes>" : ""
  const where = `${note} ${method} ${url.slice(0, 120)} ${shown} → ${res.status} ${text.slice(0, 300)}`
  expect(res.status, where).toBeLessThan(500)
  if (res.status < 400) {
    if (method === "GET" || method === "HEAD")
      expect(await snapshot(), `a read changed rows: ${where}`).toBe(before)
    return { status: res.status, code: null, where }
  }
  expect(res.headers.get("content-type"), where).toMatch(/^application\/json/)
  expect(await snapshot(), `refused, yet changed: ${where}`).toBe(before)
  if (method === "HEAD") return { status: res.status, code: null, where }
  const parsed = ErrorResponse.safeParse(JSON.parse(text))
  expect(parsed.success, where).toBe(true)
  const { code, message } = (parsed.data as { error: { code: string; message: string } }).error
  expect(DOCUMENTED_CODES.has(code), where).toBe(true)
  expect(res.status, where).toBe(statusForCode(code))
  expect(message, where).not.toMatch(/\n\s+at |\.ts:\d|node_modules|file:\/\//)
  expect(message, where).not.toContain(SECRET)
  return { status: res.status, code, where }
}

const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1)
const shown = (m: Map<string | number, number>) => JSON.stringify(Object.fromEntries([...m].sort()))

describe("the edge API's error contract under malformed requests", () => {
  it(`${REQUESTS} seeded requests: < 500, one JSON error shape, scopes and limits first, nothing changed on refusal`, async () => {
    const auths = await tokens()
    const r = seededRandom(SEED)
    const statuses = new Map<number, number>()
    const codes = new Map<string, number>()
    let gated = 0
    let sent = 0
    while (sent < REQUESTS) {
      const { app, snapshot, held, done } = await setup()
      const w: World = {
        ids: ["held-1", "done-1", "unknown-1", "fresh-1", "a/b", "é🙂", "x".repeat(512)],
        leases: [held.lease, done.lease, "a".repeat(16), "a".repeat(15), "a".repeat(129)],
      }
      const gens = bodies(w)
      for (let i = 0; i < BATCH && sent < REQUESTS; i++, sent++) {
        const doc = pick(r, DOCUMENTED_ROUTES)
        // Half the requests carry a token with the route's scope, so that they reach the body, the ids and the rows.
        const scoped = auths.filter(
          (a) => a.grant.kind === "scopes" && doc.scope && a.grant.scopes.has(doc.scope),
        )
        const auth = chance(r, 0.5) && scoped.length ? pick(r, scoped) : pick(r, auths)
        const headers: Record<string, string> = {}
        if (auth.header !== undefined) headers.authorization = auth.header
        let method: string
        let path: string
        let route: Sent["route"] = null
        let body: Sent["body"]
        if (chance(r, 0.9)) {
          const [id, reaches] = pathId(r, w)
          method = chance(r, 0.9)
            ? doc.method.toUpperCase()
            : pick(r, ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "PROPFIND"])
          path = doc.path.replace("{id}", id)
          if (method === doc.method.toUpperCase() && (reaches || !doc.path.includes("{id}"))) route = doc
          body = bodyText(r, gens[`${doc.method} ${doc.path}`])
        } else {
          method = pick(r, ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
          path = pick(r, [
            "/",
            "/v1",
            "/v1/",
            "/v1/calls/",
            "//v1//calls",
            "/v1/rows/a/b/c",
            "/V1/CALLS",
            "/v2/calls",
          ])
          body = bodyText(r, undefined)
        }
        if (body !== undefined) headers["content-type"] = chance(r, 0.8) ? "application/json" : pick(r, TYPES)
        if (chance(r, 0.03))
          headers["content-length"] = pick(r, [
            "-1",
            "abc",
            "1e3",
            "99999999999999999",
            String(MAX_BYTES + 1),
          ])
        if (method === "GET" || method === "HEAD") body = undefined
        const q = query(r, auth)
        const res = await checked(
          app,
          snapshot,
          method,
          `${path}${q}`,
          headers,
          body,
          `#${sent} [${auth.header?.slice(0, 20)}]`,
        )
        count(statuses, res.status)
        if (res.code) count(codes, res.code)
        const want = gate({ method, path, headers, body, route, auth, hasQuery: q !== "" })
        if (want) {
          gated++
          expect([res.status, res.code ?? want[1]], res.where).toEqual(want)
        } else if (route?.scope && auth.grant.kind === "scopes" && auth.grant.scopes.has(route.scope)) {
          // Past the gates, the scope is never the refusal.
          expect([401, 403], res.where).not.toContain(res.status)
        }
      }
    }
    console.log(
      `error contract: ${sent} requests, ${gated} answered by a gate; statuses ${shown(statuses)}; codes ${shown(codes)}`,
    )
    expect(sent).toBe(REQUESTS)
    // The mix reaches past the gates too: successes and schema refusals, not only 401s.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(REQUESTS / 50)
    for (const code of [
      "invalid_body",
      "invalid_json",
      "too_deep",
      "payload_too_large",
      "unsupported_media_type",
      "forbidden",
      "unauthorized",
      "invalid_path",
      "invalid_query",
      "not_found",
    ])
      expect(codes.get(code) ?? 0, code).toBeGreaterThan(0)
  }, 240_000)

  it("every field of every route's body, two levels deep, replaced by each hostile value, or left out", async () => {
    const statuses = new Map<number, number>()
    const codes = new Map<string, number>()
    let sent = 0
    // The bodies the routes take, each valid for the rows setup() makes (a release needs the UNKNOWN row).
    const bases = (held: { lease: string; fence: number }): [string, string, Record<string, unknown>][] => {
      const h = { fence: held.fence, lease: held.lease }
      const row = (id: string) => ({
        request_id: id,
        tool: "t",
        status: "in-flight",
        terminal_outcome: "IN_FLIGHT",
        fence: 1,
        owner: null,
        lease_until: null,
        side_effect_boundary: "not_crossed",
        effect_phase: "INTENDED",
        result: null,
      })
      return [
        [
          "POST",
          "/v1/calls",
          {
            tool: "pay",
            args: { amount: 5, order: "o-1" },
            binding: {
              agent_id: "a",
              policy_version: "1",
              side_effect_class: "keyed_mutate",
              scope_from: { thread_id: "th", run_id: "r", node: "n" },
              retry_permission: "safe_retry",
              side_effect_boundary_default: "not_crossed",
              spendability: "multi_use",
              capability: "blind",
              provider_idempotency_key_param: "key",
              provider_idempotency_key_ttl: 60,
              request_id_from: "order",
            },
            meta: { request_id: "sweep-1", tool_call_id: "c1", thread_id: "th", run_id: "r", node: "n" },
            lease_ttl: 30,
          },
        ],
        [
          "POST",
          "/v1/calls/held-1/boundary",
          { ...h, boundary: "maybe_crossed", external_operation_ref: "op_1" },
        ],
        ["POST", "/v1/calls/held-1/complete", { ...h, result: { id: "pi_2" } }],
        [
          "POST",
          "/v1/calls/held-1/complete",
          { ...h, unstorable: { limit: "max_depth", message: "too deep" } },
        ],
        ["POST", "/v1/calls/held-1/fail", { ...h, error: "boom", boundary: "maybe_crossed" }],
        ["POST", "/v1/calls/held-1/renew", { ...h, lease_ttl: 30 }],
        [
          "POST",
          "/v1/transitions/unknown-1/release",
          { verified: "completed", reason: "checked", by: "ops", result: { id: "pi_1" }, expected_fence: 1 },
        ],
        [
          "POST",
          "/v1/transitions/held-1/mark-worker-dead",
          { reason: "gone", by: "ops", override_heartbeat: true, expected_fence: 1 },
        ],
        ["PUT", "/v1/rows/raw-1", { row: row("raw-1") }],
        [
          "POST",
          "/v1/rows/raw-2/claim",
          { entry: row("raw-2"), lease_ttl: 30, reclaim_fence: null, dispatch_id: "d1" },
        ],
        [
          "POST",
          "/v1/rows/unknown-1/transition",
          {
            next: { ...row("unknown-1"), terminal_outcome: "COMPLETED", status: "completed" },
            expect: {
              outcomes: ["UNKNOWN"],
              fence: 1,
              owner: null,
              effect_phase: "INTENDED",
              lease_held_at: 1,
            },
          },
        ],
        ["POST", "/v1/receipts/verify", { require_chain: true, heads: { t: { seq: 0, digest: "x" } } }],
      ]
    }
    const HOLE = "@@hole@@"
    const paths = (o: Record<string, unknown>, at: string[] = []): string[][] =>
      Object.entries(o).flatMap(([k, v]) =>
        v && typeof v === "object" && !Array.isArray(v) && at.length < 1
          ? [[...at, k], ...paths(v as Record<string, unknown>, [...at, k])]
          : [[...at, k]],
      )
    const replaced = (o: Record<string, unknown>, path: string[], raw: string | undefined): string => {
      const copy = structuredClone(o)
      let parent = copy
      for (const k of path.slice(0, -1)) parent = parent[k] as Record<string, unknown>
      const last = path.at(-1) as string
      if (raw === undefined) delete parent[last]
      else parent[last] = HOLE
      return JSON.stringify(copy).replace(`"${HOLE}"`, () => raw ?? "")
    }
    for (const [method, url, base] of bases({ lease: "a".repeat(43), fence: 1 })) {
      // Unchanged, each base goes through: the sweep reaches past the schema to the rows.
      const fresh = await setup()
      const own = bases(fresh.held).find(
        ([m, u, b]) => m === method && u === url && Object.keys(b).join() === Object.keys(base).join(),
      )
      const ok = await checked(
        fresh.app,
        fresh.snapshot,
        method,
        url,
        { authorization: fresh.all, "content-type": "application/json" },
        JSON.stringify(own?.[2]),
        "base",
      )
      expect(ok.status, ok.where).toBe(200)
      sent++
      for (const path of paths(base)) {
        for (const raw of [undefined, ...HOSTILE]) {
          const { app, snapshot, all, held } = await setup()
          // The route's own base, with the lease this setup minted.
          const own = bases(held).find(
            ([m, u, b]) => m === method && u === url && Object.keys(b).join() === Object.keys(base).join(),
          )
          const body = replaced(own?.[2] ?? base, path, raw)
          const headers = { authorization: all, "content-type": "application/json" }
          const res = await checked(app, snapshot, method, url, headers, body, path.join("."))
          sent++
          count(statuses, res.status)
          if (res.code) count(codes, res.code)
        }
        // The same field as a key the schema does not know, beside it.
        const { app, snapshot, all } = await setup()
        const extra = replaced({ ...base, [`${path.join("_")}_x`]: 1 }, [`${path.join("_")}_x`], '"x"')
        const res = await checked(
          app,
          snapshot,
          method,
          url,
          { authorization: all, "content-type": "application/json" },
          extra,
          "extra key",
        )
        sent++
        count(statuses, res.status)
      }
    }
    console.log(`field sweep: ${sent} requests; statuses ${shown(statuses)}; codes ${shown(codes)}`)
    expect(sent).toBeGreaterThan(2000)
    expect(statuses.get(200) ?? 0).toBeGreaterThan(100)
    expect(codes.get("invalid_body") ?? 0).toBeGreaterThan(1000)
  }, 240_000)
})
