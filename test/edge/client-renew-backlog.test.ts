// A ledger API that stalls while a body runs: RemoteLedger queued a renewal per tick on its serial write chain, each
// waiting a whole requestTimeout, and kept renewing a lease that had lapsed, so the call failed long after its body
// returned (a 20 s body with a 2 s timeout: 21 s later). One renewal at a time, none once the lease lapsed by the
// client's clock: the call fails about one requestTimeout after the body. An in-process API, stalled by its fetch.
import { describe, expect, it } from "vitest"
import { LedgerStorageUnavailableError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

describe("RemoteLedger while the API stalls during a body", () => {
  it("renews one at a time, stops once the lease lapsed, and fails one requestTimeout after the body", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    let stalled = false
    const posts: string[] = []
    // Stalled: the request never answers; only requestTimeout's signal ends it.
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
      posts.push(new URL(String(input)).pathname.split("/").pop() ?? "")
      if (!stalled) return app.fetch(new Request(input, init))
      const route = posts.at(-1)
      return new Promise((_, reject) => {
        const signal = init?.signal
        signal?.addEventListener(
          "abort",
          () => {
            posts.push(`${route} timed out`)
            reject(signal.reason)
          },
          { once: true },
        )
      })
    }) as typeof globalThis.fetch
    // A 0.3 s lease renewed every 0.1 s; each stalled request is cut off after 0.25 s.
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      fetch,
      leaseTtl: 0.3,
      requestTimeout: 0.25,
      onWarning: () => {},
    })
    // Warm: a cold first claim can take longer than a renewal interval.
    await remote.tool({ name: "warm" }, () => 1)({}, { toolCallId: "w" })
    posts.length = 0
    let bodyEnd = 0
    let duringBody = 0
    const call = remote.tool({ name: "report" }, async () => {
      stalled = true
      await new Promise((r) => setTimeout(r, 1000))
      duringBody = posts.length
      bodyEnd = Date.now()
      return 1
    })
    const error = await call({ a: 1 }, { toolCallId: "c1" }).catch((e: unknown) => {
      posts.push("failed")
      return e
    })
    const after = Date.now() - bodyEnd
    expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
    // One renewal at most (the next ticks found it in flight, then the lease lapsed), then the completion alone, whose
    // timeout fails the call: the order, not the clock, shows it failed one requestTimeout after the body (a backlog
    // of renewals would come between). The bound only catches a call that hangs.
    expect(posts.filter((p) => p === "renew").length).toBeLessThanOrEqual(1)
    expect(posts.slice(duringBody)).toEqual(["complete", "complete timed out", "failed"])
    expect(after).toBeLessThan(5_000)
  }, 10_000)
})
