// A fractional in_flight_ttl (mycelium.yaml takes 86400.5) reached Redis as `SET key row EX 86400.5`, which Redis
// refuses: every claim failed as a storage outage. The TTL sent is whole seconds, rounded up so the key outlives
// the lease at least as long as the original's int() truncation kept it.
import { afterAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { runTag } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const base = `mycelium-test:${runTag("redis-ttl")}`
const storage = new RedisLedgerStorage({ url: REDIS_URL, prefix: `${base}:action:`, inFlightTtl: 86400.5 })

afterAll(async () => {
  const keys = (await storage.connection.command("KEYS", `${base}:*`)) as string[]
  if (keys.length) await storage.connection.command("DEL", ...keys)
  await storage.close()
})

describe("redis in-flight TTL", () => {
  it("a fractional inFlightTtl claims, and the in-flight key's TTL is that many seconds rounded up", async () => {
    const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
    let ttl: unknown = null
    const pay = ledger.tool({ name: "pay" }, async (args: { amount: number }) => {
      ttl = await storage.connection.command("TTL", `${base}:action:r-frac`)
      return `paid ${args.amount}`
    })
    expect(await pay({ amount: 1 }, { requestId: "r-frac" })).toBe("paid 1")
    expect(ttl).toBeGreaterThanOrEqual(86400)
    expect(ttl).toBeLessThanOrEqual(86401)
  })
})
