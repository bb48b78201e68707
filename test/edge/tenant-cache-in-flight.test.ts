// maxCachedTenants drops a tenant idle for 5 minutes; idle was counted from when its last request began. A request
// still running past that (a store that stalls) lost its tenant's ledger under it, and the tenant's next request
// built a second one: two ledgers each wrote the row as they had read it, and a provider ref the agent reported was
// written over by the stalled renewal (the reconciler then has no ref to look the payment up by).
import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { type LedgerStorage, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp, jwtAuth } from "../../src/edge/index.ts"
import { ManualClock } from "../../src/testing.ts"
import { gatedStore, nextRead } from "../core/ledger/gated-store.ts"

const SECRET = "tenant-cache-secret-tenant-cache-secret-01"
const key = new TextEncoder().encode(SECRET)
const token = (tenant: string) =>
  new SignJWT({ tenant, scope: "ledger:agent" })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(key)

const begin = {
  tool: "pay",
  args: { amount: 1 },
  binding: { agent_id: "a", policy_version: "1", side_effect_class: "non_idempotent_mutate" },
  meta: { tool_call_id: "call_1" },
  lease_ttl: 3600,
}

/** An app caching one tenant at a time on `clock`: tenant "a" on `storeA`, "b" on a store of its own. */
async function twoTenants(storeA: LedgerStorage) {
  const clock = new ManualClock()
  const built: string[] = []
  const app = createLedgerApp({
    clock,
    maxCachedTenants: 1,
    storage: (t) => {
      built.push(t)
      return t === "a" ? storeA : new MemoryLedgerStorage()
    },
    authenticate: jwtAuth({ secret: SECRET }),
  })
  const tokens = { a: await token("a"), b: await token("b") }
  const post = (tenant: "a" | "b", path: string, body: unknown) =>
    app.request(path, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json", authorization: `Bearer ${tokens[tenant]}` },
    })
  return { clock, built, post }
}

describe("maxCachedTenants with a request in flight", () => {
  it("keeps a tenant whose request outlives the idle time: its ref is not written over by its renewal", async () => {
    const rows = new MemoryLedgerStorage()
    const read = nextRead()
    const gated = gatedStore(rows, read.gated)
    const tenants = await twoTenants(gated.store)
    const { clock, built } = tenants
    const post = async (tenant: "a" | "b", path: string, body: unknown) => {
      const res = await tenants.post(tenant, path, body)
      return { status: res.status, body: (await res.json()) as Record<string, unknown> }
    }
    const run = await post("a", "/v1/calls", begin)
    expect(run.body.status).toBe("run")
    const id = run.body.request_id as string
    const holder = { fence: run.body.fence, lease: run.body.lease }

    // The renewal reads the row, then its store stalls for more than the 5 idle minutes.
    read.arm()
    const renewal = post("a", `/v1/calls/${id}/renew`, { ...holder, lease_ttl: 3600 })
    await gated.arrived
    clock.advance(400)
    expect((await post("b", "/v1/calls", begin)).body.status).toBe("run")
    const ref = post("a", `/v1/calls/${id}/boundary`, { ...holder, external_operation_ref: "pi_123" })
    await new Promise((r) => setTimeout(r, 20))
    gated.open()
    const [renewed, reported] = await Promise.all([renewal, ref])
    expect([renewed.status, reported.status]).toEqual([200, 200])
    expect((await rows.get(id))?.externalOperationRef).toBe("pi_123")
    // One ledger for "a" throughout: it was busy, so it stayed though the cap was passed.
    expect(built).toEqual(["a", "b"])

    // Its requests done (one refused), it goes once idle like any other, and is built again when it comes back.
    expect((await post("a", `/v1/calls/${id}/renew`, { ...holder, lease: "0".repeat(64) })).status).toBe(409)
    clock.advance(400)
    expect((await post("b", "/v1/calls", begin)).body.status).toBe("poll")
    expect((await post("a", `/v1/calls/${id}/renew`, holder)).status).toBe(200)
    expect(built).toEqual(["a", "b", "a"])
  })

  it("drops a tenant whose request never ends once it has been quiet for an hour: the cap still bounds the cache", async () => {
    // workerd cancels a request whose client went away (a RemoteLedger timeout): its promises never settle and its
    // finally never runs, so its count stayed up and the tenant was kept for the isolate's life, past the cap.
    // The first store call of "a" never answers.
    let first = true
    const gated = gatedStore(new MemoryLedgerStorage(), () => {
      const stop = first
      first = false
      return stop
    })
    const tenants = await twoTenants(gated.store)
    const { clock, built } = tenants
    // Another call each time: none waits on the row the cancelled request holds.
    let calls = 0
    const post = (tenant: "a" | "b") =>
      tenants.post(tenant, "/v1/calls", { ...begin, meta: { tool_call_id: `call_${++calls}` } })
    void post("a")
    await gated.arrived
    clock.advance(400)
    expect((await post("b")).status).toBe(200)
    expect(built).toEqual(["a", "b"])
    clock.advance(3600)
    expect((await post("b")).status).toBe(200)
    // "a" went: its next request builds it again.
    expect((await post("a")).status).toBe(200)
    expect(built).toEqual(["a", "b", "a"])
  })
})
