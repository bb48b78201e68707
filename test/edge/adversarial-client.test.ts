// The agent client when the server in front of it is broken or hostile: a proxy that answers 200 `{}`, a
// half-written `run`, another call's replay, absurd retry hints. The real app sits behind a tampering layer; every
// case asserts how many times the tool body ran, because a body that runs without a claim is a second payment.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { MemoryLedgerStorage } from "../../src/core/index.ts"
import { LedgerPollTimeoutError, LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const json = (v: unknown) =>
  new Response(JSON.stringify(v), { headers: { "content-type": "application/json" } })

/** The real app behind a layer that may replace its answer to `POST /v1/calls`. */
function behind(tamper: (real: Record<string, unknown>) => unknown) {
  const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
  let requests = 0
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    requests++
    const res = await app.fetch(new Request(input, init))
    if (!String(input).endsWith("/v1/calls")) return res
    return json(tamper((await res.json()) as Record<string, unknown>))
  }) as typeof globalThis.fetch
  return { fetch, requests: () => requests }
}

async function callOnce(tamper: (real: Record<string, unknown>) => unknown, pollTimeout = 1) {
  const server = behind(tamper)
  let runs = 0
  const ledger = new RemoteLedger({
    baseUrl: "http://x",
    fetch: server.fetch,
    pollTimeout,
    onWarning: () => {},
  })
  const pay1 = ledger.tool({ name: "pay", binding: pay }, async () => {
    runs++
    return "paid"
  })
  const outcome = await pay1({ amount: 1 }, { requestId: "order-1" }).then(
    (v) => ({ value: v as unknown }),
    (e: unknown) => ({ error: e }),
  )
  return { runs, outcome, requests: server.requests() }
}

describe("RemoteLedger against a broken or hostile server", () => {
  for (const [label, tamper] of [
    ["200 {}", () => ({})],
    ["200 null", () => null],
    ["an unknown status", (r: Record<string, unknown>) => ({ ...r, status: "ok" })],
    ["a run without its lease", (r: Record<string, unknown>) => ({ ...r, lease: undefined })],
    // Sent back on every renewal and the completion, a 10 MB lease was counted against the result's byte limit.
    ["a run whose lease is 10 MB", (r: Record<string, unknown>) => ({ ...r, lease: "x".repeat(1e7) })],
    ["a run whose lease is 15 characters", (r: Record<string, unknown>) => ({ ...r, lease: "x".repeat(15) })],
    ["a run without its fence", (r: Record<string, unknown>) => ({ ...r, fence: "1" })],
    ["a run without its limits", (r: Record<string, unknown>) => ({ ...r, limits: undefined })],
    ["a run for another request id", (r: Record<string, unknown>) => ({ ...r, request_id: "order-2" })],
    ["a block without its error", () => ({ status: "blocked" })],
  ] as const) {
    it(`${label}: the body never runs, and the call fails closed as a storage outage`, async () => {
      const { runs, outcome } = await callOnce(tamper)
      expect(runs).toBe(0)
      expect((outcome as { error?: unknown }).error).toBeInstanceOf(LedgerStorageUnavailableError)
    })
  }

  it("another call's replay is never returned as this call's result", async () => {
    const { runs, outcome } = await callOnce(() => ({
      status: "replay",
      request_id: "someone-else",
      result: "their secret",
    }))
    expect(runs).toBe(0)
    expect(outcome).not.toHaveProperty("value")
    expect((outcome as { error?: unknown }).error).toBeInstanceOf(LedgerStorageUnavailableError)
  })

  it("retry hints of 1e9, -1 or text neither spin nor outlive the poll timeout", async () => {
    for (const retry of [1e9, 1e5, -1, "soon"]) {
      const started = Date.now()
      const { runs, outcome, requests } = await callOnce(() => ({ status: "poll", retry_after: retry }), 0.5)
      const took = Date.now() - started
      expect([retry, runs]).toEqual([retry, 0])
      expect((outcome as { error?: unknown }).error).toBeInstanceOf(LedgerPollTimeoutError)
      // 0.5 s of polling at the 10 ms floor is at most ~50 requests, not thousands; and it ends near the timeout.
      expect(requests, String(retry)).toBeLessThanOrEqual(60)
      expect(took, String(retry)).toBeLessThan(3000)
    }
  })

  it("the untampered server still runs the body once and replays it", async () => {
    const { runs, outcome } = await callOnce((r) => r)
    expect([runs, outcome]).toEqual([1, { value: "paid" }])
  })
})

describe("a caller that gives up while the server claims its call", () => {
  it("the body never starts: the call fails before its effect, and the row says so", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const ac = new AbortController()
    // A slow network: the caller (a framework's tool timeout) gives up while the claim is on its way back.
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await app.fetch(new Request(input, init))
      if (String(input).endsWith("/v1/calls")) ac.abort(new Error("timed out"))
      return res
    }) as typeof globalThis.fetch
    const ledger = new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: () => {} })
    let runs = 0
    const call = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
    const outcome = await call({ amount: 1 }, { requestId: "order-1", signal: ac.signal }).catch(
      (e: unknown) => e,
    )
    expect(String(outcome)).toContain("timed out")
    expect(runs).toBe(0)
    const row = (await (await app.fetch(new Request("http://x/v1/transitions/order-1"))).json()) as {
      transition: { terminal_outcome: string }
    }
    expect(row.transition.terminal_outcome).toBe("FAILED_BEFORE_EFFECT")
  })
})

describe("answers too large to read", () => {
  /** An answer that streams up to 50 MB of spaces; counts what was pulled. */
  const endless = () => {
    const served = { bytes: 0 }
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        served.bytes += 64 * 1024
        if (served.bytes > 50 * 1024 * 1024) c.close()
        else c.enqueue(new Uint8Array(64 * 1024).fill(32))
      },
    })
    return { served, response: new Response(body, { headers: { "content-type": "application/json" } }) }
  }

  it("RemoteLedger stops reading at maxResponseBytes and fails closed; nothing runs", async () => {
    const { served, response } = endless()
    let runs = 0
    const ledger = new RemoteLedger({
      baseUrl: "http://x",
      fetch: (async () => response) as typeof fetch,
      maxResponseBytes: 1024 * 1024,
      onWarning: () => {},
    })
    const call = ledger.tool({ name: "pay", binding: pay }, async () => {
      runs++
      return 1
    })
    await expect(call({ amount: 1 }, { requestId: "big" })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(runs).toBe(0)
    expect(served.bytes).toBeLessThan(2 * 1024 * 1024)
  })

  it("HttpLedgerStorage stops reading at maxResponseBytes: response_too_large", async () => {
    const { served, response } = endless()
    const storage = new HttpLedgerStorage({
      url: "http://x",
      fetch: (async () => response) as typeof fetch,
      maxResponseBytes: 1024 * 1024,
    })
    await expect(storage.get("big")).rejects.toMatchObject({ code: "response_too_large" })
    expect(served.bytes).toBeLessThan(2 * 1024 * 1024)
  })

  it("a declared Content-Length over the limit is refused before reading", async () => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++
        c.enqueue(new Uint8Array(1024))
      },
    })
    const storage = new HttpLedgerStorage({
      url: "http://x",
      fetch: (async () =>
        new Response(body, { headers: { "content-length": String(500 * 1024 * 1024) } })) as typeof fetch,
      maxResponseBytes: 1024 * 1024,
    })
    await expect(storage.get("big")).rejects.toMatchObject({ code: "response_too_large" })
    expect(pulled).toBeLessThanOrEqual(1)
  })
})

describe("RemoteLedger: a holder route's answer must be the call's state", () => {
  /** The real app, with the answers to one holder route replaced. */
  function holderTampered(route: string, answer: (real: Record<string, unknown>) => unknown) {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await app.fetch(new Request(input, init))
      if (!String(input).endsWith(`/${route}`)) return res
      return json(answer((await res.json()) as Record<string, unknown>))
    }) as typeof globalThis.fetch
    return new RemoteLedger({ baseUrl: "http://x", fetch, onWarning: () => {} })
  }

  for (const [label, answer] of [
    ["200 {}", () => ({})],
    ["200 null", () => null],
    ["an error envelope sent with 200", () => ({ error: { code: "ledger_stale_fence", message: "x" } })],
    ["another fence", (r: Record<string, unknown>) => ({ ...r, fence: 0 })],
    ["another call", (r: Record<string, unknown>) => ({ ...r, request_id: "order-2" })],
  ] as const) {
    it(`boundary answered ${label}: sideEffect() never pays`, async () => {
      // Taken as done, the payment ran with maybe_crossed never stored, and a redispatch after a crash paid again.
      const ledger = holderTampered("boundary", answer)
      let charges = 0
      const payTool = ledger.tool({ name: "pay", binding: pay }, async (_a: { amount: number }, tx) =>
        tx.sideEffect(() => ++charges),
      )
      await expect(payTool({ amount: 1 }, { requestId: "order-1" })).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
      expect(charges).toBe(0)
    })

    it(`complete answered ${label}: the call is not reported done`, async () => {
      const ledger = holderTampered("complete", answer)
      const payTool = ledger.tool({ name: "pay", binding: pay }, async () => "paid")
      await expect(payTool({ amount: 1 }, { requestId: "order-1" })).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
    })
  }
})
