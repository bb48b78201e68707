// A worker that claims a non_idempotent_mutate call on Redis or Upstash and hangs inside sideEffect(), to be
// SIGKILLed there by redis-python-tomb.test.ts. argv: backend(upstash|redis) prefix toolCallId
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { hang } from "../hang.ts"
import { upstashClient } from "./servers/env.ts"

const [backend, prefix, toolCallId] = process.argv.slice(2) as [string, string, string]
const storage =
  backend === "redis"
    ? new RedisLedgerStorage({
        url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
        prefix,
        inFlightTtl: 1,
      })
    : new UpstashLedgerStorage({ redis: upstashClient(), prefix, inFlightTtl: 1 })
const ledger = new ActionLedger({ storage, leaseTtl: 1, onWarning: () => {} })
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const pay = ledger.tool({ name: "pay", binding }, async (_a: { amount: number }, tx) =>
  tx.sideEffect(async () => {
    console.log("READY")
    await hang()
  }),
)
await pay({ amount: 5 }, { toolCallId })
