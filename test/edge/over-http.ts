// A store reached the way a remote worker reaches it: `backing` behind the real edge app, over HttpLedgerStorage.
// The server leases on its own clock and ignores the client's `now`; the conformance suite drives time through `now`,
// so this shim moves the server's clock to each call's `now` first: the test controls the clock, the wire does not.
// Runtime-neutral (the workers project uses it too).
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import type { LedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

/** `leaseClock`: the server's clock, for the conformance suite's model (LedgerStorageFixture.leaseClock). */
export function overHttp(
  backing: (now: () => number) => LedgerStorage,
): LedgerStorage & { readonly leaseClock: () => number } {
  let t = 1_800_000_000
  const now = () => t
  const app = createLedgerApp({ storage: backing(now), clock: { now } })
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch
  const http = new HttpLedgerStorage({ url: "http://ledger.local", fetch })
  return {
    leaseClock: now,
    limits: http.limits,
    get: (id) => http.get(id),
    set: (e) => http.set(e),
    list: (o) => http.list(o),
    findByDispatchId: (d) => http.findByDispatchId(d),
    tryClaimInflight(entry, ttl, at, options) {
      t = at
      return http.tryClaimInflight(entry, ttl, at, options)
    },
    tryTransition(next, expect) {
      if (expect.leaseHeldAt !== undefined) t = expect.leaseHeldAt
      return http.tryTransition(next, expect)
    },
  }
}
