// RemoteLedger against a broken or hostile server, driven by an in-process fetch (no network, no timing margins): a
// replay without its result, a claim granting a longer lease than asked, a renewal granting none, a failure answered
// without its outcome, and a fetch that ignores the request's signal while its headers or body never come.
import { afterEach, describe, expect, it, vi } from "vitest"
import { LedgerLeaseError, LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const json = (v: unknown, status = 200) =>
  new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } })
const LEASE = "L".repeat(43)

afterEach(() => {
  vi.restoreAllMocks()
})

/** A scripted server: `answers[route]` gives the answer for each request to that route. */
function server(answers: Record<string, (body: Record<string, unknown>) => Response>) {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const route = String(input).split("/").pop() as string
    const body = JSON.parse(String(init?.body ?? "{}")) as Record<string, unknown>
    const f = answers[route]
    if (!f) return json({ error: { code: "not_found", message: "no" } }, 404)
    return f(body)
  }) as typeof globalThis.fetch
}

const state = (outcome: string, fence = 1) => ({
  request_id: "order-1",
  fence,
  terminal_outcome: outcome,
  side_effect_boundary: "maybe_crossed",
  effect_phase: null,
  lease_until: 0,
  external_operation_ref: null,
})

const run = (leaseTtl: number) =>
  json({
    status: "run",
    request_id: "order-1",
    fence: 1,
    lease: LEASE,
    lease_until: 0,
    lease_ttl: leaseTtl,
    side_effect_boundary: "not_crossed",
    authorized_reexec: false,
    limits: { max_body_bytes: 1 << 20, max_depth: 128 },
  })

/** Both clocks `ms` on from `at` (the wall's and the monotonic one's readings then). */
function jump(at: { wall: number; mono: number }, ms: number) {
  vi.spyOn(Date, "now").mockReturnValue(at.wall + ms)
  vi.spyOn(performance, "now").mockReturnValue(at.mono + ms)
}

/** A server whose claim grants `claimTtl` and whose renewals answer `renew`; the call's writes succeed. */
function leaseServer(claimTtl: number, renew: Record<string, unknown> = { lease_ttl: 30 }) {
  return server({
    calls: () => run(claimTtl),
    boundary: () => json(state("IN_FLIGHT")),
    renew: () => json({ ...state("IN_FLIGHT"), ...renew }),
    complete: () => json({ ...state("COMPLETED"), result_stored: true }),
    fail: () => json(state("UNKNOWN")),
  })
}

/**
 * A payment whose body moves both clocks to each of `steps` (ms after the claim; "renew" renews the lease there)
 * before its effect: what the effect did, and how the call ended (its result or its error).
 */
async function payAfter(fetch: typeof globalThis.fetch, steps: Array<number | "renew">, leaseTtl?: number) {
  const at = { wall: Date.now(), mono: performance.now() }
  const effects: string[] = []
  const ledger = new RemoteLedger({
    baseUrl: "http://x",
    fetch,
    ...(leaseTtl !== undefined && { leaseTtl }),
    leaseRenewInterval: 0,
    onWarning: () => {},
  })
  const t = ledger.tool({ name: "pay", binding: pay }, async (_a: { amount: number }, tx) => {
    for (const step of steps)
      if (step === "renew") await tx.renewLease()
      else jump(at, step)
    return tx.sideEffect(() => {
      effects.push("charged")
      return "paid"
    })
  })
  const outcome = await t({ amount: 1 }, { requestId: "order-1" }).catch((e: unknown) => e)
  return { effects, outcome }
}

describe("RemoteLedger and broken answers", () => {
  it("a 200 replay without its result is an outage, not the call's result (undefined)", async () => {
    const fetch = server({ calls: () => json({ status: "replay", request_id: "order-1" }) })
    let runs = 0
    const ledger = new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: () => {} })
    const t = ledger.tool({ name: "pay", binding: pay }, async () => {
      runs++
      return "paid"
    })
    const error = await t({ amount: 1 }, { requestId: "order-1" }).then(
      () => null,
      (e: unknown) => e,
    )
    expect(runs).toBe(0)
    expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(String(error)).toMatch(/a replay without its result/)
  })

  it("a replay whose result is null is still the call's result", async () => {
    const fetch = server({ calls: () => json({ status: "replay", request_id: "order-1", result: null }) })
    const ledger = new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: () => {} })
    const t = ledger.tool({ name: "pay", binding: pay }, async () => "paid")
    await expect(t({ amount: 1 }, { requestId: "order-1" })).resolves.toBeNull()
  })

  it("a claim granting a longer lease than asked is reckoned as the lease asked", async () => {
    // The server grants min(asked, maxLeaseTtl): 30 s asked, so its lease ends 30 s after the claim. A broken or
    // replayed answer says 1e6 s. The body stalls 60 s (both clocks move): the server's 30 s lease has lapsed, and a
    // redispatch may have taken the call over.
    const { effects, outcome } = await payAfter(leaseServer(1e6), [60_000], 30)
    expect(effects).toEqual([])
    expect(outcome).toBeInstanceOf(LedgerLeaseError)
  })

  it("a renewal answered with a lease_ttl of -1 grants no lease: the claim's lapse still ends it", async () => {
    // 20 s in, a renewal the server answers with no positive lease; 40 s in (past the claim's 30 s) the effect.
    const { effects, outcome } = await payAfter(leaseServer(30, { lease_ttl: -1 }), [20_000, "renew", 40_000])
    expect(effects).toEqual([])
    expect(outcome).toBeInstanceOf(LedgerLeaseError)
  })

  it("a renewal answered without lease_ttl (a server older than it) counts as the lease asked", async () => {
    // Renewed 20 s in by the call's 30 s: the lease holds until 50 s, so the effect at 40 s runs.
    const { effects, outcome } = await payAfter(leaseServer(30, {}), [20_000, "renew", 40_000])
    expect(outcome).toBe("paid")
    expect(effects).toEqual(["charged"])
  })

  it("a fail answer without the call's terminal outcome is warned about as not recorded", async () => {
    const warnings: string[] = []
    const fetch = server({
      calls: () => run(30),
      // A proxy's answer echoing the ids but nothing the write left.
      fail: (b) => json({ request_id: "order-1", fence: b.fence }),
    })
    const ledger = new RemoteLedger({
      baseUrl: "http://x",
      fetch,
      leaseRenewInterval: 0,
      onWarning: (m) => warnings.push(m),
    })
    const t = ledger.tool({ name: "pay", binding: pay }, async () => {
      throw new Error("boom")
    })
    await expect(t({ amount: 1 }, { requestId: "order-1" })).rejects.toThrow("boom")
    expect(warnings.join("\n")).toMatch(/could not record the failure of 'pay' request 'order-1'/)
  })

  for (const outcome of ["FAILED_BEFORE_EFFECT", "FAILED_AFTER_EFFECT", "UNKNOWN"]) {
    it(`a fail answered ${outcome} (what the server's fail() writes) is recorded, without a warning`, async () => {
      const warnings: string[] = []
      const fetch = server({ calls: () => run(30), fail: () => json(state(outcome)) })
      const ledger = new RemoteLedger({
        baseUrl: "http://x",
        fetch,
        leaseRenewInterval: 0,
        onWarning: (m) => warnings.push(m),
      })
      const t = ledger.tool({ name: "pay", binding: pay }, async () => {
        throw new Error("boom")
      })
      await expect(t({ amount: 1 }, { requestId: "order-1" })).rejects.toThrow("boom")
      expect(warnings).toEqual([])
    })
  }

  for (const stall of ["headers", "body"] as const) {
    it(`a fetch that ignores the request's signal and stalls its ${stall}: the call fails at requestTimeout`, async () => {
      let signal: AbortSignal | undefined
      let cancelled: unknown = null
      const fetch = (async (_input: RequestInfo | URL, init?: RequestInit) => {
        signal = init?.signal ?? undefined
        if (stall === "headers") return new Promise<Response>(() => {})
        // Headers at once, then a body that never ends (a trickling server behind an in-process fetch).
        const body = new ReadableStream({
          start: (c) => c.enqueue(new TextEncoder().encode("{")),
          cancel: (reason) => {
            cancelled = reason
          },
        })
        return new Response(body, { headers: { "content-type": "application/json" } })
      }) as typeof globalThis.fetch
      let runs = 0
      const ledger = new RemoteLedger({
        baseUrl: "http://x",
        fetch,
        requestTimeout: 0.05,
        onWarning: () => {},
      })
      const t = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
      let settled: unknown = "pending"
      t({ amount: 1 }, { requestId: "order-1" }).then(
        (v) => {
          settled = { value: v }
        },
        (e: unknown) => {
          settled = e
        },
      )
      // Gate: the request's own deadline has passed (its signal aborted); then let queued work run.
      while (!signal) await new Promise((r) => setImmediate(r))
      if (!signal.aborted) await new Promise((r) => signal?.addEventListener("abort", r, { once: true }))
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
      expect(runs).toBe(0)
      expect(settled).toBeInstanceOf(LedgerStorageUnavailableError)
      expect(String(settled)).toMatch(/no whole answer within 0.05 s \(requestTimeout\)/)
      // The body that never ends is cancelled, not left open.
      if (stall === "body") expect((cancelled as { name?: unknown } | null)?.name).toBe("TimeoutError")
    })
  }
})
