// TaskLedger and StateFlush inside workerd, on the ledger's Durable Object (wrangler.toml's LEDGER binding).
import { env } from "cloudflare:workers"
import {
  DurableObjectStateFlushStore,
  DurableObjectTaskStore,
  type GuardObjectNamespace,
} from "../../src/adapters/durable-object-guards.ts"
import { MemoryStateFlushStore, MemoryTaskStore } from "../../src/core/index.ts"
import { testStateFlush } from "../conformance/state-flush.ts"
import { testTaskStore } from "../conformance/task-store.ts"

const LEDGER = (env as unknown as { LEDGER: GuardObjectNamespace }).LEDGER
let n = 0
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`

testStateFlush("memory (in workerd)", () => ({ storage: new MemoryStateFlushStore() }))

testStateFlush("durable-object", () => {
  const name = fresh("state")
  return {
    storage: new DurableObjectStateFlushStore(LEDGER, { name }),
    peer: new DurableObjectStateFlushStore(LEDGER, { name }),
  }
})

testTaskStore("memory (in workerd)", () => ({ storage: new MemoryTaskStore() }))

testTaskStore("durable-object", () => {
  const name = fresh("tasks")
  return {
    storage: new DurableObjectTaskStore(LEDGER, { name }),
    peer: new DurableObjectTaskStore(LEDGER, { name }),
  }
})
