// An agent token against the real worker entry in workerd (Hono → per-tenant SQLite Durable Objects): it runs its
// own calls and nothing else. Every refusal is checked on the stored row, not only on the status code.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { ActionLedger, type LedgerStorage } from "../../src/core/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import worker from "../../src/edge/worker.ts"
import { callWorker, signToken } from "./worker-fetch.ts"

const SECRET = "workerd-agent-secret-workerd-agent-secret"
const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const bindings = { ...(env as object), LEDGER_JWT_SECRET: SECRET } as never
const tenant = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const sign = (scope: string, sub = "agent") =>
  signToken(SECRET, { tenant, scope }, { sub, issuedSecondsAgo: 0 })

const fetchWorker = ((input: RequestInfo | URL, init?: RequestInit) =>
  worker.fetch(new Request(input, init), bindings, {})) as typeof globalThis.fetch

const api = (token: string, method: string, path: string, body?: unknown) =>
  callWorker(bindings, token, method, path, body)

const store = () => new DurableObjectLedgerStorage(LEDGER, { name: `tenant:${tenant}` })
const payment = { agent_id: "pay", policy_version: "1", side_effect_class: "non_idempotent_mutate" }
let n = 0
const callId = () => `call-${n++}`

interface Run {
  status: "run"
  request_id: string
  fence: number
  lease: string
}

async function begin(token: string, toolCallId: string, extra: Record<string, unknown> = {}) {
  return api(token, "POST", "/v1/calls", {
    tool: "send_payment",
    args: { amount: 100 },
    binding: payment,
    meta: { tool_call_id: toolCallId },
    ...extra,
  })
}

describe("an agent token against the worker in workerd", () => {
  it("cannot use the raw storage routes, release, or mark a worker dead", async () => {
    const agent = await sign("ledger:agent")
    const a = (await begin(agent, callId())).json as unknown as Run
    expect(a.status).toBe("run")
    await api(agent, "POST", `/v1/calls/${a.request_id}/boundary`, {
      fence: a.fence,
      lease: a.lease,
      boundary: "maybe_crossed",
    })
    await api(agent, "POST", `/v1/calls/${a.request_id}/fail`, {
      fence: a.fence,
      lease: a.lease,
      error: "timeout",
    })
    expect((await store().get(a.request_id))?.terminalOutcome).toBe("UNKNOWN")

    const row = { request_id: a.request_id, tool: "send_payment", status: "failed" }
    const attempts: Array<[string, string, unknown]> = [
      [
        "POST",
        `/v1/rows/${a.request_id}/transition`,
        {
          next: { ...row, terminal_outcome: "FAILED_BEFORE_EFFECT" },
          expect: { outcomes: ["UNKNOWN"], fence: a.fence },
        },
      ],
      [
        "PUT",
        `/v1/rows/${a.request_id}`,
        { row: { ...row, terminal_outcome: "COMPLETED", status: "completed", result: "fake" } },
      ],
      [
        "POST",
        `/v1/rows/${a.request_id}/claim`,
        { entry: row, lease_ttl: 60, now: Date.now() / 1000 + 7200 },
      ],
      ["GET", `/v1/rows/${a.request_id}`, undefined],
      ["GET", "/v1/rows", undefined],
      ["POST", `/v1/transitions/${a.request_id}/release`, { verified: "not_executed", reason: "trust me" }],
      [
        "POST",
        `/v1/transitions/${a.request_id}/mark-worker-dead`,
        { reason: "trust me", override_heartbeat: true },
      ],
    ]
    for (const [method, path, body] of attempts) {
      const r = await api(agent, method, path, body)
      expect([method, path, r.status, r.json.error?.code]).toEqual([method, path, 403, "forbidden"])
    }
    const after = await store().get(a.request_id)
    expect([after?.terminalOutcome, after?.fence, after?.operatorResolution]).toEqual([
      "UNKNOWN",
      a.fence,
      null,
    ])
    // And the call itself stays blocked for every agent: nobody re-runs the payment.
    const again = await begin(agent, "unused", {})
    expect(again.json.status).toBe("run") // a different call id is a different call
    const redispatch = await api(agent, "POST", "/v1/calls", {
      tool: "send_payment",
      args: { amount: 100 },
      binding: payment,
      meta: { request_id: a.request_id },
    })
    expect(redispatch.json.status).toBe("blocked")
  })

  it("cannot mark FAILED, UNKNOWN or COMPLETED without the held lease and current fence", async () => {
    const alice = await sign("ledger:agent", "alice")
    const mallory = await sign("ledger:agent", "mallory")
    const a = (await begin(alice, callId())).json as unknown as Run
    const shown = await store().get(a.request_id)
    // Mallory sees what a reader sees (owner, fence) and guesses leases: none of it moves the row.
    const guesses = [
      { fence: a.fence, lease: shown?.owner ?? "" },
      { fence: a.fence, lease: "A".repeat(43) },
      { fence: a.fence + 1, lease: a.lease.replace(/.$/, (c) => (c === "A" ? "B" : "A")) },
    ].filter((g) => g.lease.length >= 16)
    for (const g of guesses) {
      for (const [op, body] of [
        ["complete", { ...g, result: { id: "fake" } }],
        ["fail", { ...g, error: "x", boundary: "not_crossed" }],
        ["boundary", { ...g, boundary: "crossed" }],
        ["renew", { ...g, lease_ttl: 3600 }],
      ] as const) {
        const r = await api(mallory, "POST", `/v1/calls/${a.request_id}/${op}`, body)
        expect([op, r.status]).toEqual([op, 409])
      }
    }
    expect((await store().get(a.request_id))?.terminalOutcome).toBe("IN_FLIGHT")
    // Even Alice's own lease with a stale fence is refused.
    const stale = await api(alice, "POST", `/v1/calls/${a.request_id}/complete`, {
      fence: a.fence - 1 || 99,
      lease: a.lease,
      result: 1,
    })
    expect(stale.status).toBe(409)
    const ok = await api(alice, "POST", `/v1/calls/${a.request_id}/complete`, {
      fence: a.fence,
      lease: a.lease,
      result: { id: "pi_1" },
    })
    expect(ok.status).toBe(200)
    const done = await store().get(a.request_id)
    expect([done?.terminalOutcome, done?.result]).toEqual(["COMPLETED", { id: "pi_1" }])
  })

  it("cannot move an outcome or boundary backwards", async () => {
    const agent = await sign("ledger:agent")
    const a = (await begin(agent, callId())).json as unknown as Run
    const held = { fence: a.fence, lease: a.lease }
    const path = `/v1/calls/${a.request_id}`
    expect(
      (await api(agent, "POST", `${path}/boundary`, { ...held, boundary: "crossed" })).json
        .side_effect_boundary,
    ).toBe("crossed")
    expect(
      (await api(agent, "POST", `${path}/boundary`, { ...held, boundary: "maybe_crossed" })).json
        .side_effect_boundary,
    ).toBe("crossed")
    // A failure claimed "before the effect" on a crossed row is recorded as after it.
    expect(
      (await api(agent, "POST", `${path}/fail`, { ...held, error: "x", boundary: "not_crossed" })).json
        .terminal_outcome,
    ).toBe("FAILED_AFTER_EFFECT")
    for (const [op, body] of [
      ["complete", { ...held, result: 1 }],
      ["fail", { ...held, error: "again" }],
      ["boundary", { ...held, boundary: "crossed" }],
      ["renew", held],
    ] as const) {
      expect([op, (await api(agent, "POST", `${path}/${op}`, body)).status]).toEqual([op, 409])
    }
    expect((await store().get(a.request_id))?.terminalOutcome).toBe("FAILED_AFTER_EFFECT")

    const b = (await begin(agent, callId())).json as unknown as Run
    await api(agent, "POST", `/v1/calls/${b.request_id}/boundary`, {
      fence: b.fence,
      lease: b.lease,
      boundary: "maybe_crossed",
    })
    const f = await api(agent, "POST", `/v1/calls/${b.request_id}/fail`, {
      fence: b.fence,
      lease: b.lease,
      error: "x",
      boundary: "not_crossed",
    })
    expect(f.json.terminal_outcome).toBe("UNKNOWN")
  })

  it("cannot take over a live lease, whatever clock it claims", async () => {
    const alice = await sign("ledger:agent", "alice")
    const mallory = await sign("ledger:agent", "mallory")
    const id = callId()
    const a = (await begin(alice, id, { lease_ttl: 60 })).json as unknown as Run
    const before = await store().get(a.request_id)
    for (const extra of [{}, { lease_ttl: 1e9 }]) {
      const m = await begin(mallory, id, extra)
      expect(m.json.status).toBe("poll")
    }
    // A client `now` is not part of the agent API at all.
    const withNow = await begin(mallory, id, { now: Date.now() / 1000 + 7200 })
    expect(withNow.status).toBe(400)
    const row = await store().get(a.request_id)
    expect([row?.fence, row?.owner, row?.leaseUntil]).toEqual([1, before?.owner, before?.leaseUntil])
  })

  it("a lapsed lease's holder loses the row to the reclaimer (stale fence refused)", async () => {
    const agent = await sign("ledger:agent")
    const read = { agent_id: "r", policy_version: "1", side_effect_class: "read" }
    const body = {
      tool: "lookup",
      args: {},
      binding: read,
      meta: { request_id: `lookup:${callId()}` },
      lease_ttl: 0.5,
    }
    const a = (await api(agent, "POST", "/v1/calls", body)).json as unknown as Run
    await new Promise((r) => setTimeout(r, 700))
    const b = (await api(agent, "POST", "/v1/calls", body)).json as unknown as Run
    expect([b.status, b.fence]).toEqual(["run", a.fence + 1])
    const late = await api(agent, "POST", `/v1/calls/${a.request_id}/complete`, {
      fence: a.fence,
      lease: a.lease,
      result: "stale",
    })
    expect(late.status).toBe(409)
    await api(agent, "POST", `/v1/calls/${b.request_id}/complete`, {
      fence: b.fence,
      lease: b.lease,
      result: "fresh",
    })
    expect((await store().get(a.request_id))?.result).toBe("fresh")
  })

  it("RemoteLedger through the worker: 2 round trips, 3 with sideEffect(), replay 1", async () => {
    const calls: string[] = []
    const token = await sign("ledger:agent")
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      token,
      fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
        calls.push(new URL(String(input)).pathname.replace(/\/v1\/calls\/[^/]+\//, "/v1/calls/:id/"))
        return fetchWorker(input, init)
      }) as typeof globalThis.fetch,
      onWarning: () => {},
    })
    let runs = 0
    const pay = remote.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async (a: { amount: number }, tx) => tx.sideEffect(() => ({ id: `pi_${++runs}`, amount: a.amount })),
    )
    expect(await pay({ amount: 3 }, { toolCallId: callId() + "x" })).toEqual({ id: "pi_1", amount: 3 })
    expect(calls).toEqual(["/v1/calls", "/v1/calls/:id/boundary", "/v1/calls/:id/complete"])
    const id = callId()
    calls.length = 0
    await pay({ amount: 4 }, { toolCallId: id })
    calls.length = 0
    expect(await pay({ amount: 4 }, { toolCallId: id })).toEqual({ id: "pi_2", amount: 4 })
    expect(calls).toEqual(["/v1/calls"])
    expect(runs).toBe(2)
  })
})

describe("RemoteLedger races and crashes through the worker", () => {
  it("16 concurrent redispatches of one call: one execution, every caller gets its result", async () => {
    const token = await sign("ledger:agent")
    let runs = 0
    const id = callId()
    const callers = Array.from({ length: 16 }, () => {
      const remote = new RemoteLedger({
        baseUrl: "http://edge.test",
        token,
        fetch: fetchWorker,
        onWarning: () => {},
      })
      return remote.tool(
        { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
        async (_a: { amount: number }, tx) =>
          tx.sideEffect(async () => {
            runs++
            await new Promise((r) => setTimeout(r, 40))
            return { id: `pi_${runs}` }
          }),
      )
    })
    const out = await Promise.all(callers.map((pay) => pay({ amount: 1 }, { toolCallId: id })))
    expect(runs).toBe(1)
    expect(new Set(out.map((o) => o.id))).toEqual(new Set(["pi_1"]))
  })

  it("an agent that dies inside sideEffect(): after its lease lapses the redispatch is blocked, never re-run", async () => {
    const agent = await sign("ledger:agent")
    const id = callId()
    const a = (await begin(agent, id, { lease_ttl: 0.5 })).json as unknown as Run
    await api(agent, "POST", `/v1/calls/${a.request_id}/boundary`, {
      fence: a.fence,
      lease: a.lease,
      boundary: "maybe_crossed",
    })
    // ...and never completes. The server's clock lapses the lease; no client can claim otherwise.
    await new Promise((r) => setTimeout(r, 700))
    let runs = 0
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      token: agent,
      fetch: fetchWorker,
      onWarning: () => {},
    })
    const pay = remote.tool(
      {
        name: "send_payment",
        binding: { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      },
      async () => ++runs,
    )
    await expect(pay({ amount: 100 }, { toolCallId: id })).rejects.toMatchObject({
      name: "LedgerHardBlockError",
    })
    expect(runs).toBe(0)
    const row = await store().get(a.request_id)
    expect([row?.terminalOutcome, row?.fence]).toEqual(["BLOCKED", a.fence])
  })
})

describe("Durable Object claims", () => {
  it("a claim with dispatch_id returns the siblings in the same call (no findByDispatchId round trip)", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: `dispatch-${tenant}` })
    const row = (id: string) => newEntry({ requestId: id, tool: "t", kwargs: { tool_call_id: "call-1" } }, 1)
    const first = await s.tryClaimInflight(row("a"), 60, 100, { reclaimFence: null, dispatchId: "call-1" })
    expect(first.outcome === "claimed" && first.dispatchSiblings?.map((e) => e.requestId)).toEqual(["a"])
    const second = await s.tryClaimInflight(row("b"), 60, 100, { reclaimFence: null, dispatchId: "call-1" })
    expect(second.outcome === "claimed" && second.dispatchSiblings?.map((e) => e.requestId).sort()).toEqual([
      "a",
      "b",
    ])
    let lookups = 0
    const counted: LedgerStorage = {
      get: (id) => s.get(id),
      set: (e) => s.set(e),
      tryClaimInflight: (e, ttl, now, o) => s.tryClaimInflight(e, ttl, now, o),
      tryTransition: (n, x) => s.tryTransition(n, x),
      list: (o) => s.list(o),
      findByDispatchId: (d) => {
        lookups++
        return s.findByDispatchId(d)
      },
    }
    const ledger = new ActionLedger({ storage: counted, onWarning: () => {} })
    await ledger.tool(
      { name: "t2", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async () => 1,
    )({}, { toolCallId: "call-2" })
    expect(lookups).toBe(0)
  })
})

describe("results the Durable Object cannot hold", () => {
  const nested = (d: number) => {
    let v: unknown = 1
    for (let i = 0; i < d; i++) v = [v]
    return v
  }

  it("SQLite really refuses such rows", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: `limits-raw-${tenant}` })
    await expect(
      s.set(newEntry({ requestId: "deep", tool: "t", result: nested(1200) as never }, 1)),
    ).rejects.toThrow()
    await expect(
      s.set(newEntry({ requestId: "big", tool: "t", result: "x".repeat(3 * 1024 * 1024) }, 1)),
    ).rejects.toThrow()
  })

  for (const [label, make] of [
    ["3 MB", () => "x".repeat(3 * 1024 * 1024)],
    ["nested 1,200 deep", () => nested(1200)],
  ] as const) {
    it(`a tool returning ${label} leaves no IN_FLIGHT row; the replay raises`, async () => {
      const storage = new DurableObjectLedgerStorage(LEDGER, { name: `limits-${label}-${tenant}` })
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      let runs = 0
      const t = ledger.tool(
        { name: "big", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
        async (_a, tx) =>
          tx.sideEffect(async () => {
            runs++
            return make()
          }),
      )
      await t({}, { requestId: "big:1" })
      const row = await storage.get("big:1")
      expect([row?.terminalOutcome, row?.result]).toEqual(["COMPLETED", null])
      await expect(t({}, { requestId: "big:1" })).rejects.toMatchObject({
        name: "LedgerResultUnstorableError",
      })
      expect(runs).toBe(1)
    })
  }
})
