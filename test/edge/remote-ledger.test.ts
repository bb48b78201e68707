// RemoteLedger against the edge app (Node, memory store): round trips per call, exactly-once under redispatch,
// failure classification by the stored boundary, and results the store cannot hold.
import { describe, expect, it } from "vitest"
import {
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  LedgerResultUnstorableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { ManualClock } from "../../src/testing.ts"
import { expectRenewals } from "../core/ledger/renewals.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

function setup(storage = new MemoryLedgerStorage()) {
  const app = createLedgerApp({ storage, pollInterval: 0.005 })
  const calls: string[] = []
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`)
    return app.fetch(new Request(input, init))
  }) as typeof globalThis.fetch
  const warnings: string[] = []
  const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: (m) => warnings.push(m) })
  return { app, storage, calls, remote, warnings }
}

describe("RemoteLedger over the edge app", () => {
  it("a tool's lease shorter than the client's renewal interval is renewed every third of it", async () => {
    // The server's clock decides leases; renewals are the client's real timers (every 0.1 s for a 0.3 s lease, long
    // enough that a busy machine's timer delays never lapse it by the client's clock, which then stops renewing).
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, clock, pollInterval: 0.005 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const client = (o: object = {}) =>
      new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {}, ...o })
    const idempotent = { ...binding, sideEffectClass: "idempotent_mutate" } as const
    let runs = 0
    let release = () => {}
    const body = async () => {
      runs++
      await new Promise<void>((r) => {
        release = r
      })
      return runs
    }
    const a = client({ leaseRenewInterval: 20 }).tool(
      { name: "pay", binding: idempotent, leaseTtl: 0.3 },
      body,
    )
    const first = a({ x: 1 }, { toolCallId: "c1" })
    // The one row's heartbeat (its request id is the server's to derive).
    const heartbeat = async () => {
      for await (const r of storage.list()) return r.lastHeartbeatAt
      return null
    }
    await expectRenewals(clock, heartbeat, 0.2, 5)
    // Held still: a redispatch waits for the call instead of taking a lapsed lease over and running it again.
    const second = client().tool({ name: "pay", binding: idempotent, leaseTtl: 0.3 }, body)(
      { x: 1 },
      { toolCallId: "c1" },
    )
    await new Promise((r) => setTimeout(r, 30))
    release()
    expect(await first).toBe(1)
    expect(await second).toBe(1)
    expect(runs).toBe(1)
  })

  it("renewals keep the call's own lease, not the server's shorter default", async () => {
    // The server renewed a renewal without lease_ttl to its default: a 0.3 s lease cut to 0.1 s lapsed between
    // renewals (every 0.1 s) and a redispatch took the call over while its body ran.
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, clock, defaultLeaseTtl: 0.1 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {} })
    let release = () => {}
    const call = remote.tool(
      { name: "pay", binding: { ...binding, sideEffectClass: "idempotent_mutate" }, leaseTtl: 0.3 },
      () => new Promise<number>((r) => (release = () => r(1))),
    )({ x: 1 }, { toolCallId: "c1" })
    const row = async () => {
      for await (const r of storage.list()) return r
      return null
    }
    await expectRenewals(clock, async () => (await row())?.lastHeartbeatAt, 0.05, 2)
    expect((await row())?.leaseUntil).toBeCloseTo(clock.now() + 0.3, 6)
    release()
    expect(await call).toBe(1)
  })

  it("happy path: 2 round trips, 3 with sideEffect(), a replay 1", async () => {
    const { remote, calls, storage } = setup()
    let runs = 0
    const plain = remote.tool({ name: "lookup", binding }, async (a: { q: string }) => {
      runs++
      return { q: a.q, n: runs }
    })
    expect(await plain({ q: "x" }, { toolCallId: "c1" })).toEqual({ q: "x", n: 1 })
    expect(calls).toEqual(["POST /v1/calls", expect.stringMatching(/^POST \/v1\/calls\/[^/]+\/complete$/)])

    calls.length = 0
    const pay = remote.tool({ name: "pay", binding }, async (a: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        return { charged: a.amount }
      }),
    )
    expect(await pay({ amount: 5 }, { toolCallId: "c2" })).toEqual({ charged: 5 })
    expect(calls.map((c) => c.replace(/\/v1\/calls\/[^/]+\//, "/v1/calls/:id/"))).toEqual([
      "POST /v1/calls",
      "POST /v1/calls/:id/boundary",
      "POST /v1/calls/:id/complete",
    ])

    calls.length = 0
    expect(await pay({ amount: 5 }, { toolCallId: "c2" })).toEqual({ charged: 5 })
    expect(calls).toEqual(["POST /v1/calls"])
    expect(runs).toBe(2)
    const rows = []
    for await (const r of storage.list()) rows.push(r)
    expect(rows.map((r) => r.terminalOutcome)).toEqual(["COMPLETED", "COMPLETED"])
    // The row's owner is derived from the secret lease, never the lease itself.
    for (const r of rows) expect(r.owner).toMatch(/^lease:[0-9a-f]{40}$/)
  })

  it("20 concurrent redispatches of one call: one execution, every caller gets its result", async () => {
    const { remote } = setup()
    let runs = 0
    const pay = remote.tool({ name: "pay", binding }, async (_a: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        await new Promise((r) => setTimeout(r, 30))
        return { id: `pi_${runs}` }
      }),
    )
    const out = await Promise.all(
      Array.from({ length: 20 }, () => pay({ amount: 1 }, { toolCallId: "storm" })),
    )
    expect(runs).toBe(1)
    expect(new Set(out.map((o) => o.id))).toEqual(new Set(["pi_1"]))
  })

  it("a failure before the effect may re-run; inside sideEffect() it hard-blocks the redispatch", async () => {
    const { remote, storage } = setup()
    let runs = 0
    const early = remote.tool({ name: "early", binding }, async () => {
      runs++
      if (runs === 1) throw new Error("validation failed")
      return "ok"
    })
    await expect(early({}, { toolCallId: "e1" })).rejects.toThrow("validation failed")
    expect((await storage.get((await firstId(storage, "early")) as string))?.terminalOutcome).toBe(
      "FAILED_BEFORE_EFFECT",
    )
    expect(await early({}, { toolCallId: "e1" })).toBe("ok")

    let effects = 0
    const risky = remote.tool({ name: "risky", binding }, async (_a, tx) =>
      tx.sideEffect(async () => {
        effects++
        throw new Error("gateway timeout")
      }),
    )
    await expect(risky({}, { toolCallId: "r1" })).rejects.toThrow("gateway timeout")
    expect((await storage.get((await firstId(storage, "risky")) as string))?.terminalOutcome).toBe("UNKNOWN")
    await expect(risky({}, { toolCallId: "r1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(effects).toBe(1)
  })

  it("args drift on a reused tool call id is refused with LedgerIdentityConflictError", async () => {
    const { remote } = setup()
    const t = remote.tool(
      { name: "send", binding: { ...binding, sideEffectClass: "non_idempotent_mutate" } },
      async () => 1,
    )
    await t({ to: "a" }, { toolCallId: "same" })
    await expect(t({ to: "b" }, { toolCallId: "same" })).rejects.toBeInstanceOf(LedgerIdentityConflictError)
  })

  it("recordExternalOperation stores the provider reference", async () => {
    const { remote, storage } = setup()
    const t = remote.tool({ name: "ref", binding }, async (_a, tx) => {
      await tx.recordExternalOperation("pi_123")
      return 1
    })
    await t({}, { requestId: "ref:1" })
    expect((await storage.get("ref:1"))?.externalOperationRef).toBe("pi_123")
  })

  for (const [label, make, limit] of [
    ["3 MB", () => "x".repeat(3 * 1024 * 1024), "max_row_bytes"],
    [
      "nested 1,200 deep",
      () => {
        let v: unknown = 1
        for (let i = 0; i < 1200; i++) v = [v]
        return v
      },
      "max_depth",
    ],
  ] as const) {
    it(`a result ${label}: no IN_FLIGHT row, replay raises naming ${limit}`, async () => {
      const { remote, storage, warnings } = setup()
      let runs = 0
      const t = remote.tool({ name: "big", binding }, async (_a, tx) =>
        tx.sideEffect(async () => {
          runs++
          return make()
        }),
      )
      await t({}, { requestId: "big:1" })
      const row = await storage.get("big:1")
      expect(row?.terminalOutcome).toBe("COMPLETED")
      expect(row?.result).toBeNull()
      expect(warnings.join()).toContain("not stored")
      await expect(t({}, { requestId: "big:1" })).rejects.toMatchObject({
        name: "LedgerResultUnstorableError",
        limit,
      })
      await expect(t({}, { requestId: "big:1" })).rejects.toBeInstanceOf(LedgerResultUnstorableError)
      expect(runs).toBe(1)
    })
  }
})

async function firstId(storage: MemoryLedgerStorage, tool: string): Promise<string | null> {
  for await (const r of storage.list()) if (r.tool === tool) return r.requestId
  return null
}
