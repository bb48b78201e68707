// HttpLedgerStorage in front of the Durable Object store, inside workerd: the app's claim answers from the DO (1 and
// 4 shards) must pass the client's check that 'claimed' is the row its claim wrote, on every conformance case.
import { env } from "cloudflare:workers"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import type { LedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
let n = 0

for (const shards of [1, 4]) {
  testLedgerStorage(`http over durable-object (${shards} shard${shards > 1 ? "s" : ""})`, () => {
    let t = 1_800_000_000
    const now = () => t
    const name = `http-conf-${Date.now().toString(36)}-${n++}`
    const app = createLedgerApp({
      storage: new DurableObjectLedgerStorage(LEDGER, { name, shards }),
      clock: { now },
    })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const http = new HttpLedgerStorage({ url: "http://ledger.local", fetch })
    const storage: LedgerStorage = {
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
    return { storage }
  })
}
