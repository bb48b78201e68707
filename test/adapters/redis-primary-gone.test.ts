// The Redis and Upstash stores when a row's primary key has expired or been evicted and only its tombstone is left
// (the in-flight TTL, `maxmemory` eviction): the scripts must read the tombstone as the row. A stale writer's set()
// over it moved a re-claimed row's fence back and wrote COMPLETED over a live claim; a claim of an abandoned
// in-flight row answered `in_flight` where get() reported its lease lapsed, and the ledger polled it to a timeout.
import { Redis } from "@upstash/redis"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { LedgerStaleFenceError } from "../../src/core/ledger/index.ts"
import { runTag, UPSTASH_TOKEN, UPSTASH_URL } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const base = `mycelium-test:${runTag("primary-gone")}`
// One Redis behind both: the REST shim serves the same server, so a key is dropped the same way for each store.
const admin = new RedisLedgerStorage({ url: REDIS_URL, prefix: `${base}:admin:` })
const stores = {
  redis: new RedisLedgerStorage({ url: REDIS_URL, prefix: `${base}:redis:` }),
  upstash: new UpstashLedgerStorage({
    redis: new Redis({ url: UPSTASH_URL, token: UPSTASH_TOKEN, enableTelemetry: false }),
    prefix: `${base}:upstash:`,
  }),
}

afterAll(async () => {
  const keys = (await admin.connection.command("KEYS", `${base}:*`)) as string[]
  if (keys.length) await admin.connection.command("DEL", ...keys)
  await stores.redis.close()
  await admin.close()
})

const T = 1_800_000_000
const entry = (requestId: string) => newEntry({ requestId, tool: "charge", kwargs: { amount: 5 } }, T)

for (const [name, store] of Object.entries(stores)) {
  const drop = (id: string) => admin.connection.command("DEL", `${base}:${name}:${id}`)

  describe(`${name}: only the tombstone is left`, () => {
    it("a stale writer's set() is refused by the tombstone's newer fence", async () => {
      const first = await store.tryClaimInflight(entry("pay-1"), 1, T)
      const second = await store.tryClaimInflight(entry("pay-1"), 60, T + 5)
      expect([first.outcome, first.entry.fence, second.outcome, second.entry.fence]).toEqual([
        "claimed",
        1,
        "claimed",
        2,
      ])
      expect(await drop("pay-1")).toBe(1)
      await expect(
        store.set({ ...first.entry, terminalOutcome: "COMPLETED", status: "completed" }),
      ).rejects.toBeInstanceOf(LedgerStaleFenceError)
      const row = await store.get("pay-1")
      expect([row?.fence, row?.terminalOutcome]).toEqual([2, "IN_FLIGHT"])
    })

    it("an in-flight claim known only from its tombstone is abandoned: reclaimed at the next fence", async () => {
      await store.tryClaimInflight(entry("pay-2"), 600, T)
      expect(await drop("pay-2")).toBe(1)
      const seen = await store.get("pay-2")
      expect(seen?.leaseUntil).toBeLessThan(T + 1)
      const again = await store.tryClaimInflight(entry("pay-2"), 600, T + 1)
      expect([again.outcome, again.entry.fence]).toEqual(["claimed", 2])
    })
  })
}
