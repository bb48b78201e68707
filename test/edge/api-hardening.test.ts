// The API as a hostile caller sees it: limits before work, pagination, tokens, one error shape, OpenAPI.
import { Validator } from "@seriousme/openapi-schema-validator"
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { LedgerConfigError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { nestsDeeper } from "../../src/edge/body.ts"
import { createLedgerApp, DOCUMENTED_ROUTES, jwtAuth } from "../../src/edge/index.ts"
import { unstorableAt } from "../../src/edge/storable.ts"
import { ManualClock } from "../../src/testing.ts"

const JSON_HEADERS = { "content-type": "application/json" }
const SECRET = "hardening-secret-hardening-secret-0123"
const key = new TextEncoder().encode(SECRET)
const errorCode = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code

/** A POST of `body` to /v1/calls as a stream, the way a client uploads it. */
const streamed = (body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  new Request("http://x/v1/calls", {
    method: "POST",
    headers: { ...JSON_HEADERS, ...headers },
    body,
    duplex: "half",
  } as RequestInit)

/** An HttpLedgerStorage whose requests reach `app` in process, counted. */
function countingClient(app: { fetch(r: Request): Response | Promise<Response> }) {
  const sent = { count: 0 }
  const http = new HttpLedgerStorage({
    url: "http://x",
    fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
      sent.count++
      return app.fetch(new Request(input, init))
    }) as typeof fetch,
  })
  return { http, sent }
}

describe("limits before work", () => {
  const app = createLedgerApp({ storage: new MemoryLedgerStorage(), limits: { maxBodyBytes: 64 * 1024 } })

  it("a declared Content-Length over the limit is 413 without reading the body", async () => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++
        c.enqueue(new Uint8Array(1024))
      },
    })
    const r = await app.fetch(streamed(body, { "content-length": String(50 * 1024 * 1024) }))
    expect(r.status).toBe(413)
    expect(await errorCode(r)).toBe("payload_too_large")
    expect(pulled).toBeLessThanOrEqual(1)
  })

  it("a streamed body without Content-Length stops being read at the limit", async () => {
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        sent += 16 * 1024
        if (sent > 50 * 1024 * 1024) c.close()
        else c.enqueue(new Uint8Array(16 * 1024).fill(32))
      },
    })
    const r = await app.fetch(streamed(body))
    expect(r.status).toBe(413)
    expect(sent).toBeLessThan(256 * 1024)
  })

  it("5,000 levels deep is 400 too_deep; text/plain is 415; bad JSON 400", async () => {
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`
    const r = await app.request("/v1/calls", {
      method: "POST",
      headers: JSON_HEADERS,
      body: `{"tool":"t","args":{"a":${deep}}}`,
    })
    expect([r.status, await errorCode(r)]).toEqual([400, "too_deep"])
    const plain = await app.request("/v1/calls", { method: "POST", body: '{"tool":"t"}' })
    expect([plain.status, await errorCode(plain)]).toEqual([415, "unsupported_media_type"])
    const bad = await app.request("/v1/calls", { method: "POST", headers: JSON_HEADERS, body: "{" })
    expect([bad.status, await errorCode(bad)]).toEqual([400, "invalid_json"])
  })

  it("depth is counted in the text before parsing: brackets inside strings and escapes do not count", async () => {
    expect(nestsDeeper(`[[["]]]]]]"]]]`, 3)).toBe(false)
    // An escaped quote does not end the string; an escaped backslash before a quote does.
    expect(nestsDeeper(String.raw`[[["\"[[[["]]]`, 3)).toBe(false)
    expect(nestsDeeper(String.raw`["\\"[[[]]]]`, 3)).toBe(true)
    expect(nestsDeeper(String.raw`["\\"[[]]]`, 3)).toBe(false)
    expect(nestsDeeper('{"a":[{"b":[]}]}', 4)).toBe(false)
    expect(nestsDeeper('{"a":[{"b":[]}]}', 3)).toBe(true)
    // What JSON.parse would have built 128 levels of is refused at 129, so the parser never sees it.
    const at = (n: number) =>
      app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: `{"tool":"t","meta":{"tool_call_id":"c"},"args":{"a":"[[[","b":${"[".repeat(n)}${"]".repeat(n)}}}`,
      })
    expect((await at(126)).status).not.toBe(400)
    const r = await at(127)
    expect([r.status, await errorCode(r)]).toEqual([400, "too_deep"])
  })

  it("where a bad string sits is named exactly, in arrays and objects", () => {
    expect(unstorableAt({ a: [1, { b: "x\u0000" }] }, "")).toBe(
      "a.1.b: text holds U+0000 or an unpaired surrogate; send valid Unicode",
    )
    expect(unstorableAt([{ "k\u0000": 1 }], "result")).toBe(
      "result.0: a key text holds U+0000 or an unpaired surrogate; send valid Unicode",
    )
    expect(unstorableAt(JSON.parse('{"x":{"__proto__":1}}'), "")).toBe(
      'x: a "__proto__" key cannot be stored; rename it',
    )
    expect(unstorableAt("\ud800", "")).toMatch(/^body: /)
    // An empty key is a segment of its own, as the walk always named it.
    expect(unstorableAt({ a: { "": "\u0000" } }, "")).toMatch(/^a\.: /)
    expect(unstorableAt({ a: { "": { b: "\u0000" } } }, "result")).toMatch(/^result\.a\.\.b: /)
    expect(unstorableAt({ a: [1, "ok", { b: null }] }, "")).toBeNull()
  })

  it("a body the client stops sending part-way is 400 invalid_body, not a 500", async () => {
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ === 0) c.enqueue(new TextEncoder().encode('{"tool":"t","args":{'))
        else c.error(new Error("aborted"))
      },
    })
    const r = await app.fetch(streamed(body))
    expect([r.status, await errorCode(r)]).toEqual([400, "invalid_body"])
  })

  it("a bad binding or request identity is a 400 with a stable code, and nothing is written", async () => {
    const storage = new MemoryLedgerStorage()
    const a = createLedgerApp({ storage })
    const begin = (body: unknown) =>
      a.request("/v1/calls", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(body) })
    const binding = { agent_id: "a", policy_version: "1", side_effect_class: "non_idempotent_mutate" }
    for (const [body, code] of [
      [{ tool: "t", binding: { ...binding, side_effect_class: "bogus" } }, "invalid_binding"],
      [{ tool: "t", binding: { ...binding, capability: "idempotent" } }, "tool_capability_declaration"],
      [
        { tool: "t", binding: { ...binding, request_id_from: "order" }, args: {} },
        "missing_request_identity",
      ],
      [{ tool: "t", meta: { request_id: "   " } }, "invalid_body"],
      [{ tool: "t", now: 1 }, "invalid_body"],
    ] as const) {
      const r = await begin(body)
      expect([JSON.stringify(body), r.status, await errorCode(r)]).toEqual([JSON.stringify(body), 400, code])
    }
    expect(storage.size).toBe(0)
  })

  it("unknown ids are 404 on every route", async () => {
    const lease = "x".repeat(43)
    for (const [path, body] of [
      ["/v1/calls/nope/complete", { fence: 1, lease, result: 1 }],
      ["/v1/calls/nope/fail", { fence: 1, lease, error: "e" }],
      ["/v1/calls/nope/boundary", { fence: 1, lease, boundary: "crossed" }],
      ["/v1/calls/nope/renew", { fence: 1, lease }],
      ["/v1/transitions/nope/release", { verified: "completed", reason: "r" }],
      ["/v1/transitions/nope/mark-worker-dead", { reason: "r" }],
    ] as const) {
      const r = await app.request(path, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(body) })
      expect(r.status, path).toBe(404)
    }
    for (const path of ["/v1/transitions/nope", "/v1/rows/nope"])
      expect((await app.request(path)).status).toBe(404)
  })

  it("a storage outage is 503 with no backend text on agent, reader and store routes alike", async () => {
    const broken = new MemoryLedgerStorage()
    const fail = () => Promise.reject(new Error("SQLITE_IOERR: disk I/O error at /secret/path"))
    Object.assign(broken, {
      get: fail,
      tryClaimInflight: fail,
      tryTransition: fail,
      set: fail,
      list: () => ({ [Symbol.asyncIterator]: () => ({ next: fail }) }),
    })
    const down = createLedgerApp({ storage: broken })
    for (const [method, path, body] of [
      ["POST", "/v1/calls", { tool: "t", meta: { request_id: "r" } }],
      ["GET", "/v1/transitions", undefined],
      ["GET", "/v1/transitions/a", undefined],
      ["GET", "/v1/rows", undefined],
      ["GET", "/v1/rows/a", undefined],
    ] as const) {
      const r = await down.request(path, {
        method,
        ...(body ? { headers: JSON_HEADERS, body: JSON.stringify(body) } : {}),
      })
      const text = await r.text()
      expect([r.status, path]).toEqual([503, path])
      expect(text).not.toContain("SQLITE")
      expect(JSON.parse(text).error.code).toBe("ledger_storage_unavailable")
    }
  })
})

describe("CORS", () => {
  it("answers preflights only for configured origins; without configuration, none", async () => {
    const preflight = (a: ReturnType<typeof createLedgerApp>, origin: string) =>
      a.request("/v1/calls", {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type",
        },
      })
    const open = createLedgerApp({ storage: new MemoryLedgerStorage(), corsOrigins: ["https://app.example"] })
    const ok = await preflight(open, "https://app.example")
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example")
    expect(ok.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("authorization")
    const evil = await preflight(open, "https://evil.example")
    expect(evil.headers.get("access-control-allow-origin")).toBeNull()
    const closed = await preflight(
      createLedgerApp({ storage: new MemoryLedgerStorage() }),
      "https://app.example",
    )
    expect(closed.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("pagination", () => {
  it("/v1/transitions pages with a default and a maximum size and a cursor", async () => {
    const storage = new MemoryLedgerStorage()
    for (let i = 0; i < 250; i++)
      await storage.set(
        newEntry({ requestId: `r${String(i).padStart(3, "0")}`, tool: i % 2 ? "odd" : "even" }, 1),
      )
    const app = createLedgerApp({ storage })
    const first = (await (await app.request("/v1/transitions")).json()) as {
      transitions: unknown[]
      cursor: string
    }
    expect(first.transitions).toHaveLength(100)
    expect((await app.request("/v1/transitions?limit=501")).status).toBe(400)
    const seen = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    do {
      const q: string = `?limit=40&tool=odd${cursor ? `&cursor=${cursor}` : ""}`
      const page = (await (await app.request(`/v1/transitions${q}`)).json()) as {
        transitions: Array<{ request_id: string; tool: string }>
        cursor: string | null
      }
      for (const t of page.transitions) {
        expect(t.tool).toBe("odd")
        seen.add(t.request_id)
      }
      cursor = page.cursor
      pages++
    } while (cursor && pages < 20)
    expect(seen.size).toBe(125)
  })
})

describe("a list prefix ending in a pair's first half", () => {
  // Listed as the prefix without the half and filtered: the ids under the whole prefix are one run, so the listing
  // stops where it ends instead of reading every row after it (3,000 here, 7 pages).
  it("stops reading where the ids under the whole prefix end", async () => {
    const rows = new MemoryLedgerStorage()
    for (const id of ["u-\u{1F600}a", "u-\u{1F601}b"])
      await rows.set(newEntry({ requestId: id, tool: "t" }, 1))
    for (let i = 0; i < 3000; i++)
      await rows.set(newEntry({ requestId: `u-\u{1F900}${String(i).padStart(4, "0")}`, tool: "t" }, 1))
    const app = createLedgerApp({ storage: rows })
    const { http, sent: pages } = countingClient(app)
    const ids: string[] = []
    for await (const e of http.list({ prefix: "u-\ud83d" })) ids.push(e.requestId)
    expect(ids).toEqual(["u-\u{1F600}a", "u-\u{1F601}b"])
    expect(pages.count).toBe(1)
  })
})

describe("tokens", () => {
  const app = createLedgerApp({
    storage: new MemoryLedgerStorage(),
    authenticate: jwtAuth({ secret: SECRET, maxTokenAge: 3600 }),
  })
  const get = (token: string) =>
    app.request("/v1/transitions", { headers: { authorization: `Bearer ${token}` } })
  const base = () => new SignJWT({ tenant: "t", scope: "ledger:reader" }).setProtectedHeader({ alg: "HS256" })

  it("needs exp, refuses a future iat and tokens older than maxTokenAge", async () => {
    expect((await get(await base().setIssuedAt().setExpirationTime("5m").sign(key))).status).toBe(200)
    expect((await get(await base().setIssuedAt().sign(key))).status).toBe(401)
    const now = Math.floor(Date.now() / 1000)
    expect(
      (
        await get(
          await base()
            .setIssuedAt(now + 365 * 86400)
            .setExpirationTime(now + 400 * 86400)
            .sign(key),
        )
      ).status,
    ).toBe(401)
    expect(
      (
        await get(
          await base()
            .setIssuedAt(now - 7200)
            .setExpirationTime(now + 600)
            .sign(key),
        )
      ).status,
    ).toBe(401)
  })

  it("a JWKS that cannot be fetched is 503 auth_unavailable, not 401", async () => {
    const jwks = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: jwtAuth({ jwksUrl: "http://127.0.0.1:9/.well-known/jwks.json" }),
    })
    const token = await new SignJWT({ tenant: "t" })
      .setProtectedHeader({ alg: "RS256", kid: "k" })
      .setExpirationTime("5m")
      .sign(
        (
          await crypto.subtle.generateKey(
            {
              name: "RSASSA-PKCS1-v1_5",
              modulusLength: 2048,
              publicExponent: new Uint8Array([1, 0, 1]),
              hash: "SHA-256",
            },
            true,
            ["sign", "verify"],
          )
        ).privateKey,
      )
    const r = await jwks.request("/v1/transitions", { headers: { authorization: `Bearer ${token}` } })
    expect([r.status, await errorCode(r)]).toEqual([503, "auth_unavailable"])
  })
})

describe("/openapi.json", () => {
  it("validates as OpenAPI 3.1 and lists every route the app serves", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const doc = (await (await app.request("/openapi.json")).json()) as {
      openapi: string
      paths: Record<string, Record<string, unknown>>
    }
    const v = new Validator()
    const res = await v.validate(doc)
    expect(res.errors ?? []).toEqual([])
    expect(res.valid).toBe(true)
    expect(v.version).toBe("3.1")
    const served = app.routes
      .filter((r) => r.method !== "ALL")
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:id/g, "{id}")}`)
    const documented = DOCUMENTED_ROUTES.map((r) => `${r.method} ${r.path}`)
    expect(new Set(documented)).toEqual(new Set(served))
    for (const r of DOCUMENTED_ROUTES)
      expect(doc.paths[r.path]?.[r.method], `${r.method} ${r.path}`).toBeDefined()
    const docs = await app.request("/docs")
    expect(docs.headers.get("content-type")).toContain("text/html")
  })
})

describe("call ids every URL can reach", () => {
  it('refuses "." and ".." as a call id at begin, before any row is written, and the HTTP store never sends one', async () => {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows })
    for (const meta of [{ request_id: ".." }, { request_id: "." }, { tool_call_id: ".." }]) {
      const r = await app.request("/v1/calls", {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({ tool: "t", args: {}, meta }),
      })
      expect([r.status, await errorCode(r)]).toEqual([400, "invalid_body"])
    }
    const ok = await app.request("/v1/calls", {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ tool: "t", args: {}, meta: { request_id: "a..b" } }),
    })
    expect(ok.status).toBe(200)
    const listed: string[] = []
    for await (const e of rows.list()) listed.push(e.requestId)
    expect(listed).toEqual(["a..b"])
    const { http, sent } = countingClient(app)
    for (const id of [".", ".."]) await expect(http.get(id)).rejects.toMatchObject({ code: "invalid_option" })
    expect(sent.count).toBe(0)
  })

  // encodeURIComponent threw a bare URIError for such an id: a repair's set() failed untyped (others: LedgerConfigError).
  it("set() and tryTransition() of an id with an unpaired surrogate are LedgerConfigError, and nothing is sent", async () => {
    const { http, sent } = countingClient(createLedgerApp({ storage: new MemoryLedgerStorage() }))
    for (const id of ["x\ud800", "\udc00x"]) {
      const row = newEntry({ requestId: id, tool: "t" }, 1)
      await expect(http.set(row), JSON.stringify(id)).rejects.toBeInstanceOf(LedgerConfigError)
      await expect(http.tryTransition(row, { outcomes: ["IN_FLIGHT"], fence: 1 })).rejects.toBeInstanceOf(
        LedgerConfigError,
      )
    }
    expect(sent.count).toBe(0)
  })
})

describe("an operator's verdict says what it means", () => {
  it("blank text and a result with not_executed are 400 invalid_body, and nothing is released", async () => {
    const rows = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage: rows })
    await rows.set(
      newEntry(
        { requestId: "r1", tool: "pay", terminalOutcome: "UNKNOWN", status: "failed" },
        Date.now() / 1000,
      ),
    )
    const release = (body: unknown) =>
      app.request("/v1/transitions/r1/release", {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify(body),
      })
    for (const body of [
      { verified: "not_executed", reason: "   " },
      { verified: "not_executed", reason: "checked", by: " \t" },
      { verified: "not_executed", reason: "checked", result: { id: "pi_1" } },
    ]) {
      const r = await release(body)
      expect([r.status, await errorCode(r)]).toEqual([400, "invalid_body"])
    }
    const dead = await app.request("/v1/transitions/r1/mark-worker-dead", {
      method: "POST",
      headers: JSON_HEADERS,
      body: JSON.stringify({ reason: " " }),
    })
    expect([dead.status, await errorCode(dead)]).toEqual([400, "invalid_body"])
    expect((await rows.get("r1"))?.operatorResolution ?? null).toBeNull()
    expect((await release({ verified: "not_executed", reason: "no charge at the gateway" })).status).toBe(200)
  })
})

describe("what an agent token declares cannot reach another call's row", () => {
  const post = async (app: ReturnType<typeof createLedgerApp>, path: string, body: unknown) => {
    const r = await app.request(path, { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(body) })
    return {
      status: r.status,
      body: (await r.json()) as Record<string, unknown> & { error?: { code: string } },
    }
  }
  const pay = { agent_id: "pay", policy_version: "1", side_effect_class: "non_idempotent_mutate" }
  const args = { amount: 100, to: "acct_1" }

  it("a begin re-sending an ambiguous payment's id with a read binding, or none, is blocked like the payment's own", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const meta = { request_id: "order-7" }
    const first = await post(app, "/v1/calls", { tool: "send_payment", args, binding: pay, meta })
    const held = { fence: first.body.fence, lease: first.body.lease }
    await post(app, "/v1/calls/order-7/boundary", { ...held, boundary: "maybe_crossed" })
    await post(app, "/v1/calls/order-7/fail", { ...held, error: "socket reset after the charge request" })
    for (const binding of [pay, { ...pay, side_effect_class: "read" }, undefined]) {
      const again = await post(app, "/v1/calls", {
        tool: "send_payment",
        args,
        meta,
        ...(binding ? { binding } : {}),
      })
      expect([binding?.side_effect_class, again.body.status, again.body.error?.code]).toEqual([
        binding?.side_effect_class,
        "blocked",
        "ledger_hard_block",
      ])
    }
    const row = (await (await app.request("/v1/transitions/order-7")).json()) as {
      transition: { fence: number }
    }
    expect(row.transition.fence).toBe(first.body.fence)
  })

  it('1e400 in the arguments is 400, not keyed like the string "Infinity"', async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const r = await app.request("/v1/calls", {
      method: "POST",
      headers: JSON_HEADERS,
      body: '{"tool":"pay","args":{"memo":1e400},"binding":{"agent_id":"a","policy_version":"1","side_effect_class":"non_idempotent_mutate"},"meta":{"request_id":"m-1"}}',
    })
    expect(r.status).toBe(400)
    expect((await app.request("/v1/transitions/m-1")).status).toBe(404)
  })

  it('1e400 anywhere in a completion\'s result is 400, not replayed as the string "Infinity"', async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const post = (path: string, body: string) =>
      app.request(path, { method: "POST", headers: JSON_HEADERS, body })
    const begin = '{"tool":"t","args":{},"meta":{"request_id":"r-1"}}'
    const run = (await (await post("/v1/calls", begin)).json()) as { fence: number; lease: string }
    const held = `"fence":${run.fence},"lease":"${run.lease}"`
    for (const result of ['{"balance":1e400}', "[1,-1e400]", "1e400"]) {
      const r = await post("/v1/calls/r-1/complete", `{${held},"result":${result}}`)
      expect([result, r.status, await errorCode(r)]).toEqual([result, 400, "invalid_body"])
    }
    // Refused before the write: the call is still open, and completes with what JSON can hold.
    expect((await post("/v1/calls/r-1/complete", `{${held},"result":{"balance":"1e400"}}`)).status).toBe(200)
    expect(await (await post("/v1/calls", begin)).json()).toMatchObject({ result: { balance: "1e400" } })
  })

  it("a scope without the ledger: prefix counts for nothing", async () => {
    const app = createLedgerApp({
      storage: new MemoryLedgerStorage(),
      authenticate: jwtAuth({ secret: SECRET }),
    })
    const token = async (scope: string) =>
      new SignJWT({ tenant: "t", scope })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("5m")
        .sign(key)
    const get = async (path: string, scope: string) =>
      (await app.request(path, { headers: { authorization: `Bearer ${await token(scope)}` } })).status
    expect(await get("/v1/rows", "store")).toBe(403)
    expect(await get("/v1/transitions", "operator reader")).toBe(403)
    expect(await get("/v1/rows", "ledger:store")).toBe(200)
    expect(await get("/v1/transitions", "ledger:reader")).toBe(200)
  })
})

describe("maxCachedTenants", () => {
  it("drops the least recently used tenant once idle for 5 minutes, and builds it again from the factory", async () => {
    const built: string[] = []
    const stores = new Map<string, MemoryLedgerStorage>()
    const clock = new ManualClock(1_800_000_000)
    const app = createLedgerApp({
      maxCachedTenants: 2,
      clock,
      storage: (t) => {
        built.push(t)
        const s = stores.get(t) ?? new MemoryLedgerStorage()
        stores.set(t, s)
        return s
      },
      authenticate: jwtAuth({ secret: SECRET }),
    })
    const as = async (tenant: string) => {
      const jwt = await new SignJWT({ tenant, scope: "ledger:reader" })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("5m")
        .sign(key)
      expect(
        (await app.request("/v1/transitions", { headers: { authorization: `Bearer ${jwt}` } })).status,
      ).toBe(200)
    }
    for (const t of ["a", "b", "a"]) {
      await as(t)
      clock.advance(400)
    }
    await as("c") // b, unused for 800 s, goes
    await as("a")
    await as("b")
    expect(built).toEqual(["a", "b", "c", "b"])
    // All used within the last 5 minutes: none goes, though the cap is passed (a request may still be running).
    await as("d")
    await as("c")
    expect(built).toEqual(["a", "b", "c", "b", "d"])
  })

  it("refuses a cap that is not a whole number >= 1", () => {
    for (const bad of [0, 1.5, Number.NaN, -1])
      expect(() => createLedgerApp({ storage: new MemoryLedgerStorage(), maxCachedTenants: bad })).toThrow(
        /maxCachedTenants/,
      )
  })
})

describe("a member named twice", () => {
  const storage = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage })
  const begin = (body: string) =>
    app.fetch(new Request("http://x/v1/calls", { method: "POST", headers: JSON_HEADERS, body }))

  it("is 400 invalid_body wherever it is, however its name is spelt, and nothing is written", async () => {
    const args = '"args":{"amount":1,"amount":1000}'
    for (const body of [
      `{"tool":"pay",${args},"meta":{"request_id":"r1"}}`,
      '{"tool":"pay","args":{"amount":1,"\\u0061mount":1000},"meta":{"request_id":"r1"}}',
      '{"tool":"pay","tool":"refund","args":{},"meta":{"request_id":"r1"}}',
      '{"tool":"pay","args":{"to":{"iban":"A","iban":"B"}},"meta":{"request_id":"r1"}}',
    ]) {
      const r = await begin(body)
      expect([r.status, await errorCode(r)]).toEqual([400, "invalid_body"])
    }
    expect(await storage.get("r1")).toBeNull()
    // The same name in sibling objects, in an array's objects, or as a string value is no repeat.
    const r = await begin(
      '{"tool":"pay","args":{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}],"k":"k"},"meta":{"request_id":"r2"}}',
    )
    expect(r.status).toBe(200)
  })

  it("an id whose escapes decode to no UTF-8 names only its literal text", async () => {
    const r = await app.fetch(new Request("http://x/v1/transitions/%ED%A0%80"))
    expect([r.status, await errorCode(r)]).toEqual([404, "not_found"])
  })
})
