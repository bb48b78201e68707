// Every documented route against a token holding each single scope: a token without the route's scope is 403
// forbidden, one with it is not. Only operator implies another scope (reader); an agent that could release a blocked
// payment or rewrite a paid row makes the payment run again, so both are also shown end to end.
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { entryToRow } from "../../src/adapter-kit.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, DOCUMENTED_ROUTES, jwtAuth } from "../../src/edge/index.ts"

const SECRET = "scope-matrix-secret-scope-matrix-0123"
const key = new TextEncoder().encode(SECRET)
const token = async (scope: string) =>
  `Bearer ${await new SignJWT({ tenant: "t", scope: `ledger:${scope}`, sub: "mallory" })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(key)}`
const GRANTS: Record<string, readonly string[]> = {
  agent: ["agent"],
  reader: ["reader"],
  operator: ["operator", "reader"],
  store: ["store"],
}
const begin = {
  tool: "pay",
  args: { amount: 100 },
  binding: { agent_id: "a", policy_version: "1", side_effect_class: "non_idempotent_mutate" },
  meta: { request_id: "pay-1" },
}

const setup = () => {
  const storage = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage, authenticate: jwtAuth({ secret: SECRET }) })
  const send = async (auth: string, method: string, path: string, body?: unknown) => {
    const r = await app.request(path, {
      method,
      headers: { authorization: auth, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes vary by route
    return { status: r.status, json: (await r.json()) as any }
  }
  return { storage, app, send }
}

describe("scope matrix", () => {
  const scoped = DOCUMENTED_ROUTES.filter((r) => r.scope !== null)

  it("documents the routes this matrix covers", () => {
    expect(scoped.length).toBeGreaterThanOrEqual(17)
    expect(scoped.map((r) => `${r.method} ${r.path} ${r.scope}`)).toEqual(
      expect.arrayContaining([
        "post /v1/transitions/{id}/release operator",
        "post /v1/transitions/{id}/mark-worker-dead operator",
        "get /v1/transitions/{id} reader",
        "put /v1/rows/{id} store",
        "get /v1/dispatch/{id} store",
      ]),
    )
  })

  for (const scope of Object.keys(GRANTS))
    it(`a ledger:${scope} token: 403 forbidden exactly on the routes it lacks the scope for`, async () => {
      const { send } = setup()
      const auth = await token(scope)
      const wrong: string[] = []
      for (const r of scoped) {
        const method = r.method.toUpperCase()
        const { status, json } = await send(
          auth,
          method,
          r.path.replace("{id}", "x"),
          method === "GET" ? undefined : {},
        )
        const allowed = GRANTS[scope]?.includes(r.scope as string)
        const forbidden = status === 403 && json?.error?.code === "forbidden"
        if (allowed ? status === 403 : !forbidden)
          wrong.push(`${method} ${r.path}: ${status} ${JSON.stringify(json)}`)
      }
      expect(wrong).toEqual([])
    })

  it("an agent cannot release a blocked payment: 403, and the redispatch does not pay again", async () => {
    const { send } = setup()
    const agent = await token("agent")
    let runs = 0
    const a = await send(agent, "POST", "/v1/calls", begin)
    if (a.json.status === "run") runs++
    const held = { fence: a.json.fence, lease: a.json.lease }
    await send(agent, "POST", "/v1/calls/pay-1/boundary", { ...held, boundary: "maybe_crossed" })
    await send(agent, "POST", "/v1/calls/pay-1/fail", { ...held, error: "timeout talking to the provider" })
    expect((await send(agent, "POST", "/v1/calls", begin)).json.status).not.toBe("run")
    const rel = await send(agent, "POST", "/v1/transitions/pay-1/release", {
      verified: "not_executed",
      reason: "trust me",
    })
    expect([rel.status, rel.json.error?.code]).toEqual([403, "forbidden"])
    if ((await send(agent, "POST", "/v1/calls", begin)).json.status === "run") runs++
    expect(runs).toBe(1)
  })

  it("an agent cannot rewrite a paid call's row: 403, and the redispatch does not pay again", async () => {
    const { storage, send } = setup()
    const agent = await token("agent")
    let runs = 0
    const a = await send(agent, "POST", "/v1/calls", begin)
    if (a.json.status === "run") runs++
    await send(agent, "POST", "/v1/calls/pay-1/complete", {
      fence: a.json.fence,
      lease: a.json.lease,
      result: { charged: 100 },
    })
    const stored = await storage.get("pay-1")
    if (!stored) throw new Error("the call was not stored")
    const row = entryToRow(stored)
    // The wire format is public: the paid call turned back into "failed before effect, released as not executed".
    const forged = {
      ...row,
      status: "failed",
      terminal_outcome: "FAILED_BEFORE_EFFECT",
      side_effect_boundary: "not_crossed",
      result: null,
      operator_resolution: "not_executed",
      resolved_by: "ops",
      resolution_reason: "verified",
      resolved_at: row.finished_at,
      released_from_outcome: "UNKNOWN",
    }
    const put = await send(agent, "PUT", "/v1/rows/pay-1", { row: forged })
    expect([put.status, put.json.error?.code]).toEqual([403, "forbidden"])
    if ((await send(agent, "POST", "/v1/calls", begin)).json.status === "run") runs++
    expect(runs).toBe(1)
  })

  it("a reader cannot mark a live call's worker dead", async () => {
    const { storage, send } = setup()
    await send(await token("agent"), "POST", "/v1/calls", { ...begin, meta: { request_id: "p1" } })
    const m = await send(await token("reader"), "POST", "/v1/transitions/p1/mark-worker-dead", {
      reason: "looks dead",
      override_heartbeat: true,
    })
    expect([m.status, m.json.error?.code]).toEqual([403, "forbidden"])
    expect((await storage.get("p1"))?.workerDeadAssertedBy ?? null).toBeNull()
  })
})
