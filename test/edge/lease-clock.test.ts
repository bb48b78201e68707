// The server's clock and caps decide leases: renew caps lease_ttl at maxLeaseTtl as begin does, and the store
// transition route judges a lease-held write by the server's clock, never the body's `lease_held_at` (a late owner
// sending its claim time would otherwise overwrite a row whose lease lapsed long ago).
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { entryToRow } from "../../src/adapter-kit.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"

const SECRET = "lease-clock-secret-lease-clock-012345"
const key = new TextEncoder().encode(SECRET)
const token = async (scope: string) =>
  `Bearer ${await new SignJWT({ tenant: "t", scope: `ledger:${scope}` })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(key)}`
const begin = (id: string, leaseTtl: number) => ({
  tool: "pay",
  args: { amount: 1 },
  binding: { agent_id: "a", policy_version: "1", side_effect_class: "non_idempotent_mutate" },
  meta: { request_id: id },
  lease_ttl: leaseTtl,
})

const setup = () => {
  const clock = { t: 1_000_000, now: () => clock.t }
  const storage = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage, clock, maxLeaseTtl: 60, authenticate: jwtAuth({ secret: SECRET }) })
  const post = async (auth: string, path: string, body: unknown) => {
    const r = await app.request(path, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes vary by route
    return { status: r.status, json: (await r.json()) as any }
  }
  return { clock, storage, post }
}

describe("leases from the server's clock", () => {
  it("begin and renew cap the lease at maxLeaseTtl", async () => {
    const { clock, post } = setup()
    const agent = await token("agent")
    const a = await post(agent, "/v1/calls", begin("b-1", 1e9))
    expect(a.json.lease_until - clock.t).toBeLessThanOrEqual(60)
    const r = await post(agent, "/v1/calls/b-1/renew", {
      fence: a.json.fence,
      lease: a.json.lease,
      lease_ttl: 1e9,
    })
    expect(r.status).toBe(200)
    expect(r.json.lease_until - clock.t).toBeLessThanOrEqual(60)
  })

  it("a late owner's lease-held store transition is refused by the server's clock, whatever lease_held_at says", async () => {
    const { clock, storage, post } = setup()
    const store = await token("store")
    // A template row from a real claim, then a fresh one claimed through the store route.
    await post(await token("agent"), "/v1/calls", begin("s-0", 10))
    const s0 = await storage.get("s-0")
    if (!s0) throw new Error("the call was not stored")
    const template = entryToRow(s0)
    const fresh = {
      ...template,
      request_id: "s-1",
      kwargs: { ...s0.kwargs, request_id: "s-1" },
      idempotency_key: "s-1",
      fence: 0,
      owner: "w1",
      lease_until: null,
      status: "pending",
      terminal_outcome: "IN_FLIGHT",
    }
    const cl = await post(store, "/v1/rows/s-1/claim", { entry: fresh, lease_ttl: 10, now: 9e9 })
    expect(cl.json.entry?.lease_until - clock.t).toBeLessThanOrEqual(10)
    clock.t += 1000 // the lease lapsed 990 s ago by the server's clock
    const s1 = await storage.get("s-1")
    if (!s1) throw new Error("the claim was not stored")
    const held = entryToRow(s1)
    const next = { ...held, status: "completed", terminal_outcome: "COMPLETED", result: { late: true } }
    const tr = await post(store, "/v1/rows/s-1/transition", {
      next,
      expect: {
        outcomes: ["IN_FLIGHT"],
        fence: held.fence,
        owner: held.owner,
        lease_held_at: clock.t - 1000,
      },
    })
    expect([tr.status, tr.json.ok]).toEqual([200, false])
    expect((await storage.get("s-1"))?.terminalOutcome).toBe("IN_FLIGHT")
  })
})
