// An agent that renews its lease from a timer while it reports crossing the boundary (any HTTP client can; a
// RemoteLedger request that timed out leaves one running on the server): the renewal, read before the boundary moved
// and written after, used to put the boundary back. The failure then read as before the effect and the next begin
// answered `run`: the payment ran twice.
import { describe, expect, it } from "vitest"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { gatedStore, nextRead } from "../core/ledger/gated-store.ts"

const begin = {
  tool: "pay",
  args: { amount: 1 },
  binding: {
    agent_id: "a",
    policy_version: "1",
    side_effect_class: "non_idempotent_mutate",
    retry_permission: "safe_retry",
  },
  meta: { tool_call_id: "call_1" },
}

type App = ReturnType<typeof createLedgerApp>
const poster = (app: App) => async (path: string, body: unknown) => {
  const res = await app.request(path, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

// One app queues a holder's writes to a row, so two requests can race only on two isolates (or servers) over one
// store: `post` goes to the isolate whose next read waits at the gate, `other` to a second one.
function twoIsolates() {
  const rows = new MemoryLedgerStorage()
  const read = nextRead()
  const { store: storage, arrived, open } = gatedStore(rows, read.gated)
  return {
    rows,
    arm: read.arm,
    arrived,
    open,
    post: poster(createLedgerApp({ storage })),
    other: poster(createLedgerApp({ storage: rows })),
  }
}

/**
 * One isolate over a store whose first reads wait until 20 ms have passed, and a call begun on it: requests sent
 * together then all read the row before any writes, unless the isolate queues them.
 */
async function oneIsolateBegun() {
  const rows = new MemoryLedgerStorage()
  const slow = gatedStore(rows, (method) => method === "get")
  setTimeout(slow.open, 20)
  const post = poster(createLedgerApp({ storage: slow.store }))
  const run = await post("/v1/calls", begin)
  return {
    rows,
    post,
    id: run.body.request_id as string,
    holder: { fence: run.body.fence, lease: run.body.lease },
  }
}

describe("edge: a renewal racing the boundary report", () => {
  it("keeps the boundary crossed, answers both, and the redispatch is blocked, not run", async () => {
    const { rows, arm, arrived, open, post, other } = twoIsolates()
    const run = await post("/v1/calls", begin)
    expect(run.body.status).toBe("run")
    const id = run.body.request_id as string
    const holder = { fence: run.body.fence, lease: run.body.lease }

    arm()
    const renewal = post(`/v1/calls/${id}/renew`, holder)
    await arrived
    const crossed = await other(`/v1/calls/${id}/boundary`, { ...holder, boundary: "crossed" })
    open()
    const renewed = await renewal
    expect([crossed.status, renewed.status]).toEqual([200, 200])
    expect(renewed.body.side_effect_boundary).toBe("crossed")
    expect((await rows.get(id))?.sideEffectBoundary).toBe("crossed")

    const failed = await post(`/v1/calls/${id}/fail`, { ...holder, error: "gateway timeout" })
    expect(failed.body.terminal_outcome).toBe("FAILED_AFTER_EFFECT")
    const again = await post("/v1/calls", begin)
    expect(again.body.status).toBe("blocked")
  })

  it("a failure report racing the boundary report records the outcome of the boundary it lands on", async () => {
    const { rows, arm, arrived, open, post, other } = twoIsolates()
    const run = await post("/v1/calls", begin)
    const id = run.body.request_id as string
    const holder = { fence: run.body.fence, lease: run.body.lease }
    // The client believes it never crossed (its boundary request timed out on its side), but the server got it.
    arm()
    const failure = post(`/v1/calls/${id}/fail`, { ...holder, error: "gave up" })
    await arrived
    expect((await other(`/v1/calls/${id}/boundary`, { ...holder, boundary: "crossed" })).status).toBe(200)
    open()
    const failed = await failure
    expect(failed.status).toBe(200)
    expect(failed.body.terminal_outcome).toBe("FAILED_AFTER_EFFECT")
    expect(await rows.get(id)).toMatchObject({
      terminalOutcome: "FAILED_AFTER_EFFECT",
      sideEffectBoundary: "crossed",
    })
  })

  it("one isolate: a renewal and a provider ref sent together both land (the later write dropped the ref)", async () => {
    const { rows, post, id, holder } = await oneIsolateBegun()
    const [renewed, ref] = await Promise.all([
      post(`/v1/calls/${id}/renew`, { ...holder, lease_ttl: 600 }),
      post(`/v1/calls/${id}/boundary`, { ...holder, external_operation_ref: "pi_123" }),
    ])
    expect([renewed.status, ref.status]).toEqual([200, 200])
    const stored = await rows.get(id)
    expect(stored?.externalOperationRef).toBe("pi_123")
    expect(stored?.leaseUntil).toBe(renewed.body.lease_until)
  })

  it("one isolate: a failure told maybe_crossed sent with the crossing records FAILED_AFTER_EFFECT", async () => {
    const { rows, post, id, holder } = await oneIsolateBegun()
    const [crossed, failed] = await Promise.all([
      post(`/v1/calls/${id}/boundary`, { ...holder, boundary: "crossed" }),
      post(`/v1/calls/${id}/fail`, { ...holder, error: "lost the answer", boundary: "maybe_crossed" }),
    ])
    expect([crossed.status, failed.status]).toEqual([200, 200])
    expect(failed.body.terminal_outcome).toBe("FAILED_AFTER_EFFECT")
    expect(await rows.get(id)).toMatchObject({
      terminalOutcome: "FAILED_AFTER_EFFECT",
      sideEffectBoundary: "crossed",
    })
  })

  it("an unknown call answers 404 ledger_unknown_request on every holder route", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const holder = { fence: 1, lease: "x".repeat(43) }
    for (const [route, extra] of [
      ["fail", { error: "e" }],
      ["fail", { error: "e", boundary: "maybe_crossed" }],
      ["complete", { result: 1 }],
      ["renew", {}],
      ["boundary", { boundary: "crossed" }],
    ] as const) {
      const res = await app.request(`/v1/calls/nope/${route}`, {
        method: "POST",
        body: JSON.stringify({ ...holder, ...extra }),
        headers: { "content-type": "application/json" },
      })
      expect([route, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
        route,
        404,
        "ledger_unknown_request",
      ])
    }
  })
})
