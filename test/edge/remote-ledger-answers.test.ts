// RemoteLedger reading the API's answers (the edge app in-process, memory store): a completion answered with another
// state is not done, a gateway's bare 500 is an outage, one lost renewal does not end renewing, and a body that
// throws after its effect is stored as failed after it.
import { describe, expect, it } from "vitest"
import { LedgerStorageUnavailableError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { ManualClock } from "../../src/testing.ts"
import { expectRenewals } from "../core/ledger/renewals.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

function remote(fetch: typeof globalThis.fetch, options: object = {}) {
  return new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {}, ...options })
}

describe("RemoteLedger and the API's answers", () => {
  it("a completion answered with the call's IN_FLIGHT state (routed to renew) is refused, not done", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    // A proxy's rewrite sends /complete to /renew: a well-formed answer, this call's id and fence, still IN_FLIGHT.
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input)
      if (!url.endsWith("/complete")) return app.fetch(new Request(input, init))
      const { fence, lease } = JSON.parse(String(init?.body))
      const body = JSON.stringify({ fence, lease, lease_ttl: 60 })
      return app.fetch(new Request(url.replace(/\/complete$/, "/renew"), { ...init, body }))
    }) as typeof globalThis.fetch
    const pay = remote(fetch).tool({ name: "pay", binding }, async () => "paid")
    const error = await pay({ amount: 1 }, { requestId: "order-1" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((await storage.get("order-1"))?.terminalOutcome).toBe("IN_FLIGHT")
  })

  it("a gateway's 500 with JSON but no error envelope is ledger_storage_unavailable", async () => {
    const fetch = (async () =>
      new Response(JSON.stringify({ message: "Internal Server Error" }), {
        status: 500,
        headers: { "content-type": "application/json" },
      })) as typeof globalThis.fetch
    const pay = remote(fetch).tool({ name: "pay" }, async () => "paid")
    const error = await pay({ amount: 1 }, { requestId: "r1" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((error as { code?: unknown }).code).toBe("ledger_storage_unavailable")
  })

  it("one renewal lost to the network: renewals go on and a redispatch waits for the result", async () => {
    // Lease time on the server's manual clock; renewals every 0.05 s of real time, with a 3 s lease the client's own
    // clock never lapses on a busy machine. Each step moves the server 2 s on: without renewals the lease lapses.
    const clock = new ManualClock()
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, clock, pollInterval: 0.005 })
    let renews = 0
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      if (String(input).endsWith("/renew") && ++renews === 1)
        return Promise.reject(new TypeError("fetch failed (one blip)"))
      return app.fetch(new Request(input, init))
    }) as typeof globalThis.fetch
    let charges = 0
    let release = () => {}
    const body = async (_a: { amount: number }, tx: { sideEffect<T>(fn: () => Promise<T>): Promise<T> }) =>
      tx.sideEffect(async () => {
        await new Promise<void>((r) => {
          release = r
        })
        return `paid ${++charges}`
      })
    const ledger = remote(fetch, { leaseTtl: 3, leaseRenewInterval: 0.05 })
    const first = ledger.tool({ name: "pay", binding }, body)({ amount: 1 }, { requestId: "order-1" })
    const heartbeat = async () => (await storage.get("order-1"))?.lastHeartbeatAt
    await expectRenewals(clock, heartbeat, 2, 3)
    const second = remote(fetch).tool({ name: "pay", binding }, body)({ amount: 1 }, { requestId: "order-1" })
    await new Promise((r) => setTimeout(r, 30))
    release()
    expect(await first).toBe("paid 1")
    expect(await second).toBe("paid 1")
    expect(charges).toBe(1)
  })

  it("a body that throws after sideEffect() returned is stored FAILED_AFTER_EFFECT, boundary crossed", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const pay = remote(fetch).tool({ name: "pay", binding }, async (_a: { amount: number }, tx) => {
      await tx.sideEffect(async () => "ch_123")
      throw new Error("parsing the provider's answer failed")
    })
    await expect(pay({ amount: 1 }, { requestId: "order-1" })).rejects.toThrow("parsing")
    const row = await storage.get("order-1")
    expect(row?.terminalOutcome).toBe("FAILED_AFTER_EFFECT")
    expect(row?.sideEffectBoundary).toBe("crossed")
  })
})
