// A ledger process on HttpLedgerStorage whose clock runs ahead of the server's judges a held row lapsed; the
// server's claim keeps it (its lease is live by the server's clock). The call re-sent the claim at once, without
// end and past its pollTimeout (about 200 requests a second); it polls now, and times out as any wait does.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import { ActionLedger, LedgerPollTimeoutError, MemoryLedgerStorage } from "../../src/index.ts"

describe("HttpLedgerStorage and a client clock ahead of the server's", () => {
  it("a reclaim the server refuses as still held is polled within pollTimeout, not re-sent at once", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    let requests = 0
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      requests++
      return app.fetch(new Request(input, init))
    }) as typeof globalThis.fetch
    const store = () => new HttpLedgerStorage({ url: "http://ledger.test", fetch })
    const binding = {
      agentId: "a",
      policyVersion: "1",
      sideEffectClass: "idempotent_mutate",
      spendability: "multi_use",
      retryPermission: "safe_retry",
    } as const
    let finish!: () => void
    const held = new Promise<void>((r) => {
      finish = r
    })
    const holder = new ActionLedger({ storage: store(), leaseTtl: 2, onWarning: () => {} })
    const ahead = () => Date.now() / 1000 + 120
    const peer = new ActionLedger({
      storage: store(),
      leaseTtl: 2,
      pollTimeout: 0.3,
      clock: { now: ahead },
      onWarning: () => {},
    })
    let runs = 0
    const first = holder.tool({ name: "sync", binding }, async () => {
      runs++
      await held
      return "holder"
    })({}, { requestId: "sync-1" })
    while ((await store().get("sync-1")) === null) await new Promise((r) => setTimeout(r, 5))

    const before = requests
    const second = peer.tool({ name: "sync", binding }, async () => {
      runs++
      return "peer"
    })({}, { requestId: "sync-1" })
    await expect(second).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    // 0.3 s of 0.05 s polls is a handful of reads and claims; the spin sent hundreds.
    expect(requests - before).toBeLessThan(40)
    finish()
    await expect(first).resolves.toBe("holder")
    expect(runs).toBe(1)
  })
})
