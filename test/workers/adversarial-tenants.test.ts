// A hostile agent against the real worker in workerd (Hono → per-tenant SQLite Durable Objects): another tenant's
// ids, leases and cursors, racing reclaims of a lapsed call, and token tricks. Every claim is checked by counting
// runs and by reading the stored rows of both tenants.
import { env } from "cloudflare:workers"
import { UnsecuredJWT } from "jose"
import { describe, expect, it } from "vitest"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { callWorker, signToken } from "./worker-fetch.ts"

const SECRET = "workerd-adversarial-secret-workerd-adversarial"
const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET } as never
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const acme = `acme${run}`
const globex = `globex${run}`

const sign = (claims: Record<string, unknown>, exp: string | number = "5m") =>
  signToken(SECRET, claims, { exp, issuedSecondsAgo: 0 })

const api = (token: string, method: string, path: string, body?: unknown) =>
  callWorker(bindings, token, method, path, body)

const storeOf = (tenant: string) => new DurableObjectLedgerStorage(LEDGER, { name: `tenant:${tenant}` })
const payment = { agent_id: "pay", policy_version: "1", side_effect_class: "non_idempotent_mutate" }
const pay = (id: string) => ({
  tool: "send_payment",
  args: { amount: 100 },
  binding: payment,
  meta: { request_id: id },
})

interface Run {
  status: string
  request_id: string
  fence: number
  lease: string
}

describe("tenant escapes through the worker", () => {
  it("the same request id in another tenant is another call: no replay, no lease, no row of the first", async () => {
    const agentA = await sign({ tenant: acme, scope: "ledger:agent" })
    const agentB = await sign({ tenant: globex, scope: "ledger:agent" })
    const readerB = await sign({ tenant: globex, scope: "ledger:reader" })
    const id = `pay:${run}:1`
    const a = (await api(agentA, "POST", "/v1/calls", pay(id))).json as unknown as Run
    expect(a.status).toBe("run")
    const done = await api(agentA, "POST", `/v1/calls/${id}/complete`, {
      fence: a.fence,
      lease: a.lease,
      result: { receipt: "acme-secret" },
    })
    expect(done.status).toBe(200)

    // Globex replays Acme's call: it must run its own, never see Acme's result.
    const b = await api(agentB, "POST", "/v1/calls", pay(id))
    expect(b.json.status).toBe("run")
    expect(JSON.stringify(b.json)).not.toContain("acme-secret")
    // Acme's lease and fence do not move Globex's row, and Globex's do not touch Acme's.
    const stolen = await api(agentB, "POST", `/v1/calls/${id}/complete`, {
      fence: a.fence,
      lease: a.lease,
      result: 1,
    })
    expect(stolen.status).toBe(409)
    const reverse = await api(agentA, "POST", `/v1/calls/${id}/fail`, {
      fence: (b.json as unknown as Run).fence,
      lease: (b.json as unknown as Run).lease,
      error: "x",
    })
    expect(reverse.status).toBe(409)
    // Globex's reader sees only Globex's row, by id, by list and with Acme's id as a cursor.
    const shown = await api(readerB, "GET", `/v1/transitions/${encodeURIComponent(id)}`)
    expect(JSON.stringify(shown.json)).not.toContain("acme-secret")
    for (const q of ["", `?cursor=${encodeURIComponent(id.slice(0, -1))}`, "?limit=500"]) {
      const list = await api(readerB, "GET", `/v1/transitions${q}`)
      expect(JSON.stringify(list.json)).not.toContain("acme-secret")
    }
    const [rowA, rowB] = await Promise.all([storeOf(acme).get(id), storeOf(globex).get(id)])
    expect([rowA?.terminalOutcome, rowA?.result]).toEqual(["COMPLETED", { receipt: "acme-secret" }])
    expect([rowB?.terminalOutcome, rowB?.fence]).toEqual(["IN_FLIGHT", 1])
  })

  it("scope and tenant tricks: case, objects, path-like tenants, expired tokens", async () => {
    const id = `pay:${run}:2`
    for (const [claims, status] of [
      [{ tenant: acme, scope: "LEDGER:AGENT" }, 403],
      [{ tenant: acme, scope: { 0: "ledger:agent" } }, 403],
      [{ tenant: acme, scope: "ledger:agentx" }, 403],
      [{ tenant: `../${acme}`, scope: "ledger:agent" }, 403],
      [{ tenant: [acme], scope: "ledger:agent" }, 403],
      [{ tenant: acme, scope: "ledger:reader" }, 403],
    ] as const) {
      const r = await api(await sign(claims), "POST", "/v1/calls", pay(id))
      expect([JSON.stringify(claims), r.status]).toEqual([JSON.stringify(claims), status])
    }
    const expired = await sign({ tenant: acme, scope: "ledger:agent" }, Math.floor(Date.now() / 1000) - 120)
    expect((await api(expired, "POST", "/v1/calls", pay(id))).status).toBe(401)
    expect(await storeOf(acme).get(id)).toBeNull()
  })
})

/** A compact JWS with this header, a valid-looking payload and a junk signature. */
const withHeader = (header: unknown) => {
  const b64 = (v: unknown) =>
    btoa(JSON.stringify(v)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
  const claims = { tenant: acme, scope: "ledger:operator", exp: Math.floor(Date.now() / 1000) + 300 }
  return `${typeof header === "string" ? header : b64(header)}.${b64(claims)}.c2ln`
}

describe("hostile token headers", () => {
  it("alg none, unknown algs, crit, HS on a secret's RS and a broken header: 401, and no unhandled rejection", async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (e: Event) => {
      unhandled.push((e as PromiseRejectionEvent).reason)
      e.preventDefault()
    }
    globalThis.addEventListener("unhandledrejection", onUnhandled)
    try {
      const tokens = [
        new UnsecuredJWT({ tenant: acme, scope: "ledger:operator" }).setExpirationTime("5m").encode(),
        withHeader({ alg: "none" }),
        withHeader({ alg: "HS999" }),
        withHeader({ alg: "dir" }),
        withHeader({ alg: "RS256" }),
        withHeader({ alg: "HS256", crit: ["exp"] }),
        withHeader({ alg: "HS256", b64: false, crit: ["b64"] }),
        withHeader({}),
        withHeader("e30"),
        withHeader("!!notbase64"),
      ]
      for (const token of tokens) {
        const r = await api(token, "GET", "/v1/transitions")
        expect([token.split(".")[0], r.status, r.json.error?.code]).toEqual([
          token.split(".")[0],
          401,
          "unauthorized",
        ])
      }
      // Let any stray rejection surface before counting.
      await new Promise((r) => setTimeout(r, 50))
      expect(unhandled.map(String)).toEqual([])
    } finally {
      globalThis.removeEventListener("unhandledrejection", onUnhandled)
    }
  })
})

describe("exactly-once through the worker under races", () => {
  it("24 parallel begins of a fresh call: one run; 24 parallel reclaims of its lapsed lease: one run at fence 2", async () => {
    const agent = await sign({ tenant: acme, scope: "ledger:agent" })
    const read = { agent_id: "r", policy_version: "1", side_effect_class: "read" }
    const body = {
      tool: "lookup",
      args: { q: run },
      binding: read,
      meta: { request_id: `lookup:${run}` },
      lease_ttl: 0.5,
    }
    const count = (rs: { json: Record<string, unknown> }[]) =>
      rs.reduce<Record<string, number>>((m, r) => {
        const s = String(r.json.status)
        m[s] = (m[s] ?? 0) + 1
        return m
      }, {})
    const first = await Promise.all(Array.from({ length: 24 }, () => api(agent, "POST", "/v1/calls", body)))
    expect(count(first)).toEqual({ run: 1, poll: 23 })
    await new Promise((r) => setTimeout(r, 700))
    const second = await Promise.all(Array.from({ length: 24 }, () => api(agent, "POST", "/v1/calls", body)))
    expect(count(second)).toEqual({ run: 1, poll: 23 })
    const winner = second.find((r) => r.json.status === "run")?.json as unknown as Run
    expect(winner.fence).toBe(2)
    // The first holder's late completion is refused; the winner's lands.
    const loser = first.find((r) => r.json.status === "run")?.json as unknown as Run
    const late = await api(agent, "POST", `/v1/calls/${encodeURIComponent(loser.request_id)}/complete`, {
      fence: loser.fence,
      lease: loser.lease,
      result: "stale",
    })
    expect(late.status).toBe(409)
    const ok = await api(agent, "POST", `/v1/calls/${encodeURIComponent(winner.request_id)}/complete`, {
      fence: winner.fence,
      lease: winner.lease,
      result: "fresh",
    })
    expect(ok.status).toBe(200)
    const row = await storeOf(acme).get(`lookup:${run}`)
    expect([row?.fence, row?.result]).toEqual([2, "fresh"])
  })

  it("text a store cannot hold is a 400 in the worker too, and nothing is written", async () => {
    const agent = await sign({ tenant: acme, scope: "ledger:agent" })
    const r = await api(agent, "POST", "/v1/calls", `{"tool":"t","meta":{"request_id":"nul\\u0000${run}"}}`)
    expect([r.status, r.json.error?.code]).toEqual([400, "invalid_body"])
    expect(await storeOf(acme).get(`nul\u0000${run}`)).toBeNull()
  })
})
