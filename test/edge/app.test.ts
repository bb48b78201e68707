import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage, LedgerHttpError } from "../../src/adapters/http.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import { writePythonFailures } from "../core/ledger/python-failures.ts"
import { overHttp } from "./over-http.ts"

const SECRET = "test-secret-with-enough-entropy-0123456789"
const sign = (claims: Record<string, unknown>) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("svc")
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(SECRET))

function served(authed = false) {
  const stores = new Map<string, MemoryLedgerStorage>()
  const storage = (tenant: string) => {
    const s = stores.get(tenant) ?? new MemoryLedgerStorage()
    stores.set(tenant, s)
    return s
  }
  const app = createLedgerApp({ storage, ...(authed ? { authenticate: jwtAuth({ secret: SECRET }) } : {}) })
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => app.fetch(new Request(input, init))
  return { app, fetch: fetch as typeof globalThis.fetch, stores }
}

// The app over memory, leasing on its own clock, which overHttp moves to each call's `now`.
testLedgerStorage("http (edge app over memory, server clock)", () => {
  const storage = overHttp(() => new MemoryLedgerStorage())
  return { storage, leaseClock: storage.leaseClock }
})

describe("edge ledger API", () => {
  it("a ledgered tool over HttpLedgerStorage runs once under redispatch", async () => {
    const { fetch } = served()
    const ledger = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://x", fetch }),
      pollInterval: 0.001,
      onWarning: () => {},
    })
    let runs = 0
    const t = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async (_a, tx) => tx.sideEffect(async () => ++runs),
    )
    const out = await Promise.all(Array.from({ length: 20 }, () => t({ amount: 1 }, { toolCallId: "c1" })))
    expect(new Set(out)).toEqual(new Set([1]))
    expect(runs).toBe(1)
  })

  it("invalid bodies get a 4xx JSON error, never a 500", async () => {
    const { app } = served()
    const bad: Array<[string, string, string | undefined]> = [
      ["POST", "/v1/rows/a/claim", "{not json"],
      ["POST", "/v1/rows/a/claim", "[]"],
      ["POST", "/v1/rows/a/claim", JSON.stringify({ entry: { request_id: "a" }, lease_ttl: 1, now: 1 })],
      [
        "POST",
        "/v1/rows/a/claim",
        JSON.stringify({ entry: { request_id: "b", tool: "t", status: "in-flight" }, lease_ttl: 1, now: 1 }),
      ],
      [
        "POST",
        "/v1/rows/a/claim",
        JSON.stringify({
          entry: { request_id: "a", tool: "t", status: "in-flight" },
          lease_ttl: "x",
          now: 1,
        }),
      ],
      [
        "POST",
        "/v1/rows/a/transition",
        JSON.stringify({
          next: { request_id: "a", tool: "t", status: "x" },
          expect: { outcomes: ["NOPE"], fence: 1 },
        }),
      ],
      ["POST", "/v1/transitions/a/release", JSON.stringify({ verified: "maybe", reason: "r" })],
      ["POST", "/v1/transitions/a/release", JSON.stringify({ verified: "completed", reason: "r" })],
      ["GET", "/v1/transitions?outcome=NOPE", undefined],
      ["GET", "/v1/rows?limit=0", undefined],
      ["GET", "/v1/rows/missing", undefined],
      ["DELETE", "/v1/rows/a", undefined],
    ]
    for (const [method, path, body] of bad) {
      const res = await app.request(path, {
        method,
        ...(body !== undefined ? { body, headers: { "content-type": "application/json" } } : {}),
      })
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400)
      expect(res.status, `${method} ${path}`).toBeLessThan(500)
      const json = (await res.json()) as { error: { code: string; message: string } }
      expect(typeof json.error.code).toBe("string")
      expect(json.error.message.length).toBeGreaterThan(0)
    }
  })

  it("operators list stuck transitions and release them over HTTP", async () => {
    const { app, fetch } = served()
    const ledger = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://x", fetch }),
      onWarning: () => {},
    })
    let runs = 0
    const t = ledger.tool(
      {
        name: "email",
        binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      },
      async (_a, tx) =>
        tx.sideEffect(async () => {
          if (++runs === 1) throw new Error("smtp timeout")
          return "sent"
        }),
    )
    await expect(t({ to: "x" }, { requestId: "email:1" })).rejects.toThrow("smtp timeout")
    const stuck = (await (await app.request("/v1/transitions?stuck=true")).json()) as {
      transitions: Array<{ request_id: string; terminal_outcome: string }>
    }
    expect(stuck.transitions.map((r) => [r.request_id, r.terminal_outcome])).toEqual([["email:1", "UNKNOWN"]])
    const json = { "content-type": "application/json" }
    const unknown = await app.request("/v1/transitions/nope/release", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ verified: "not_executed", reason: "r" }),
    })
    expect(unknown.status).toBe(404)
    const rel = await app.request("/v1/transitions/email%3A1/release", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ verified: "not_executed", reason: "not in the sent folder", by: "ops" }),
    })
    expect(rel.status).toBe(200)
    const again = await app.request("/v1/transitions/email%3A1/release", {
      method: "POST",
      headers: json,
      body: JSON.stringify({ verified: "not_executed", reason: "x" }),
    })
    expect(again.status).toBe(409)
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("ledger_already_resolved")
    expect(await t({ to: "x" }, { requestId: "email:1" })).toBe("sent")
    expect(runs).toBe(2)
  })

  it("stuck=true shows a failure 'before the effect' on a crossed-over row, which the gate hard-blocks", async () => {
    const { app, stores } = served()
    const storage = stores.get("default") ?? new MemoryLedgerStorage()
    stores.set("default", storage)
    await writePythonFailures(storage, [
      ["plain", "not_crossed"],
      ["moved", "maybe_crossed"],
    ])
    const stuck = (await (await app.request("/v1/transitions?stuck=true")).json()) as {
      transitions: Array<{ request_id: string; terminal_outcome: string; side_effect_boundary: string }>
    }
    expect(stuck.transitions.map((r) => [r.request_id, r.terminal_outcome, r.side_effect_boundary])).toEqual([
      ["moved", "FAILED_BEFORE_EFFECT", "maybe_crossed"],
    ])
  })

  it("JWT auth: tenants are isolated and scopes are enforced", async () => {
    const { fetch } = served(true)
    const agentA = await sign({ tenant: "acme", scope: "ledger:store" })
    const agentB = await sign({ tenant: "globex", scope: "ledger:store" })
    const readerA = await sign({ tenant: "acme", scope: "ledger:reader" })
    const a = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://x", fetch, token: agentA }),
      onWarning: () => {},
    })
    await a.tool(
      { name: "t", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "read" } },
      async () => "a-result",
    )({}, { requestId: "shared-id" })
    const b = new HttpLedgerStorage({ url: "http://x", fetch, token: agentB })
    expect(await b.get("shared-id")).toBeNull()
    const asReader = new HttpLedgerStorage({ url: "http://x", fetch, token: readerA })
    await expect(asReader.get("shared-id")).rejects.toMatchObject({ status: 403, code: "forbidden" })
    const anon = new HttpLedgerStorage({ url: "http://x", fetch })
    await expect(anon.get("shared-id")).rejects.toBeInstanceOf(LedgerHttpError)
    const onlyAgent = await sign({ tenant: "acme", scope: "ledger:agent" })
    await expect(
      new HttpLedgerStorage({ url: "http://x", fetch, token: onlyAgent }).get("shared-id"),
    ).rejects.toMatchObject({ status: 403, code: "forbidden" })
    const forged = await new SignJWT({ tenant: "acme", scope: "ledger:store" })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode("wrong-secret-wrong-secret-wrong-secret"))
    await expect(
      new HttpLedgerStorage({ url: "http://x", fetch, token: forged }).get("shared-id"),
    ).rejects.toMatchObject({ status: 401 })
    const list = await fetch("http://x/v1/transitions", { headers: { authorization: `Bearer ${readerA}` } })
    expect(((await list.json()) as { transitions: unknown[] }).transitions).toHaveLength(1)
  })
})
