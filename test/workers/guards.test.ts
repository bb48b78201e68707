// TaskLedger and StateFlush inside workerd, on the ledger's Durable Object (wrangler.toml's LEDGER binding).
import { env } from "cloudflare:workers"
import {
  DurableObjectReceiptStore,
  DurableObjectStateFlushStore,
  DurableObjectTaskStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import { testReceiptStore, testStateFlush, testTaskStore } from "../../src/conformance.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
let n = 0
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`

testStateFlush("durable-object", () => {
  const name = fresh("state")
  return {
    storage: new DurableObjectStateFlushStore(LEDGER, { name }),
    peer: new DurableObjectStateFlushStore(LEDGER, { name }),
  }
})

testTaskStore("durable-object", () => {
  const name = fresh("tasks")
  return {
    storage: new DurableObjectTaskStore(LEDGER, { name }),
    peer: new DurableObjectTaskStore(LEDGER, { name }),
  }
})

testReceiptStore("durable-object", () => {
  const name = fresh("receipts")
  return {
    storage: new DurableObjectReceiptStore(LEDGER, { name }),
    peer: new DurableObjectReceiptStore(LEDGER, { name }),
  }
})
