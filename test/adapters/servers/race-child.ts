// One OS process of the cross-process race: dispatches every call of the round through the ledger, `concurrency`
// at a time, on the given backend. Each tool body records its execution in the store itself (an INCR on a
// separate Redis key / an INSERT into a separate table), so the parent counts executions from the server.
// argv: backend (upstash|neon) tag calls concurrency
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../../src/adapters/upstash.ts"
import { ActionLedger, type LedgerStorage } from "../../../src/core/index.ts"
import { upstashClient } from "./env.ts"
import { neonPool } from "./neon.ts"

const [backend, tag, callsArg, concurrencyArg] = process.argv.slice(2)
const calls = Number(callsArg)
const concurrency = Number(concurrencyArg)

let storage: LedgerStorage
let recordExecution: (callId: string) => Promise<void>
let close: () => Promise<void> = async () => {}

if (backend === "upstash") {
  const redis = upstashClient()
  storage = new UpstashLedgerStorage({ redis, prefix: `mycelium-race:${tag}:action:` })
  recordExecution = async (callId) => {
    await redis.incr(`mycelium-race:${tag}:exec:${callId}`)
  }
} else {
  const pool = neonPool(undefined, 10)
  storage = new NeonLedgerStorage({ pool, table: `race_${tag}` })
  recordExecution = async (callId) => {
    await pool.query(`INSERT INTO race_${tag}_exec (call_id, pid) VALUES ($1, $2)`, [callId, process.pid])
  }
  close = () => pool.end()
}

const ledger = new ActionLedger({ storage, leaseTtl: 60, pollInterval: 0.05, pollTimeout: 120 })
const charge = ledger.tool(
  {
    name: "charge",
    binding: { agentId: "race-agent", policyVersion: "1", sideEffectClass: "keyed_mutate" },
  },
  async (args: { call: string; amount: number }) => {
    await recordExecution(args.call)
    // Long enough that redispatches from other processes find the row in flight and poll it.
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 20))
    return { charged: args.amount, call: args.call, by: process.pid }
  },
)

const ids = Array.from({ length: calls }, (_, i) => `call-${String(i).padStart(4, "0")}`)
// Each process walks the calls in its own order, so the same call is contended from different positions.
ids.sort(() => Math.random() - 0.5)
const results: Record<string, unknown> = {}
let next = 0
async function lane(): Promise<void> {
  while (next < ids.length) {
    const id = ids[next++] as string
    results[id] = await charge({ call: id, amount: 100 }, { toolCallId: `${tag}-${id}` })
  }
}
await Promise.all(Array.from({ length: concurrency }, lane))
await close()
process.stdout.write(`${JSON.stringify({ pid: process.pid, results })}\n`)
