// HttpLedgerStorage in front of the Durable Object store, inside workerd: the app's claim answers from the DO (1 and
// 4 shards) must pass the client's check that 'claimed' is the row its claim wrote, on every conformance case.
import { env } from "cloudflare:workers"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { overHttp } from "../edge/over-http.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
let n = 0

for (const shards of [1, 4]) {
  testLedgerStorage(`http over durable-object (${shards} shard${shards > 1 ? "s" : ""})`, () => {
    const name = `http-conf-${Date.now().toString(36)}-${n++}`
    const storage = overHttp(() => new DurableObjectLedgerStorage(LEDGER, { name, shards }))
    return { storage, leaseClock: storage.leaseClock }
  })
}
