import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { derivedBase } from "../../src/adapters/upstash-kit.ts"
import { ActionLedger, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { killWhenReady } from "./crash/kill-when-ready.ts"
import { requireUpstash, runTag, upstashClient } from "./servers/env.ts"

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const tag = runTag("pytomb")
const raw = upstashClient()

async function keys(match: string): Promise<string[]> {
  const out: string[] = []
  let cursor: string | number = "0"
  do {
    const [next, page]: [string | number, string[]] = await raw.scan(cursor, { match, count: 500 })
    out.push(...page.map(String))
    cursor = next
  } while (String(cursor) !== "0")
  return out
}

beforeAll(requireUpstash)
afterAll(async () => {
  const left = await keys(`*${tag}*`)
  if (left.length) await raw.del(...left)
})

describe.each(["upstash", "redis"])(
  "%s: killed inside sideEffect(), the original still finds the tombstone",
  (backend) => {
    for (const prefix of [`${tag}-${backend}-nocolon`, `${tag}-${backend}-two::`]) {
      describe(`prefix '${prefix.slice(tag.length)}'`, () => {
        let id = ""
        it("writes the tombstone at `{prefix.rstrip(':')}-tomb:{id}` (no TTL), where the original reads it", async () => {
          const callId = `call-${backend}`
          await killWhenReady("test/adapters/redis-tomb-child.ts", [backend, prefix, callId])
          const own = `${derivedBase(prefix)}tomb:`
          const tombs = await keys(`${own}*`)
          expect(tombs).toHaveLength(1)
          id = (tombs[0] as string).slice(own.length)
          const pyTomb = `${prefix.replace(/:+$/, "")}-tomb:${id}`
          const row = await raw.get<Record<string, unknown>>(`${prefix}${id}`)
          expect(row).toMatchObject({ request_id: id, terminal_outcome: "IN_FLIGHT" })
          expect(await raw.get(pyTomb)).toEqual(row)
          expect(await raw.ttl(pyTomb)).toBe(-1)
          expect(await raw.ttl(`${prefix}${id}`)).toBeGreaterThan(0)
        }, 60_000)
      })
    }
  },
)

describe("the tombstone where the original looks is also the row key of '-tomb:X'", () => {
  for (const backend of ["upstash", "redis"]) {
    it(`${backend}: X's copy never overwrites the row of '-tomb:X'; '-tomb:X' after X is refused`, async () => {
      const prefix = `${tag}-${backend}-clash`
      const storage =
        backend === "redis"
          ? new RedisLedgerStorage({ url: REDIS_URL, prefix })
          : new UpstashLedgerStorage({ redis: upstashClient(), prefix })
      const runs: string[] = []
      const pay = new ActionLedger({ storage, onWarning: () => {} }).tool(
        { name: "pay" },
        async (a: { to: string }) => runs.push(a.to),
      )
      await pay({ to: "a" }, { requestId: "-tomb:X" })
      await pay({ to: "b" }, { requestId: "X" })
      expect(await raw.get(`${prefix}-tomb:X`)).toMatchObject({ request_id: "-tomb:X" })
      await pay({ to: "c" }, { requestId: "Y" })
      expect(await raw.get(`${prefix}-tomb:Y`)).toMatchObject({ request_id: "Y" })
      await expect(pay({ to: "d" }, { requestId: "-tomb:Y" })).rejects.toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
      expect(runs).toEqual(["a", "b", "c"])
      if (storage instanceof RedisLedgerStorage) await storage.close()
    })
  }
})

describe("listing under a prefix without ':', where every row has its tombstone copy under the row prefix", () => {
  for (const backend of ["upstash", "redis"]) {
    it(`${backend}: a limit counts rows, so pages are full and paging sees every row`, async () => {
      const prefix = `${tag}-${backend}-list`
      const storage =
        backend === "redis"
          ? new RedisLedgerStorage({ url: REDIS_URL, prefix })
          : new UpstashLedgerStorage({ redis: upstashClient(), prefix })
      const pay = new ActionLedger({ storage, onWarning: () => {} }).tool({ name: "pay" }, async () => 1)
      for (const id of ["call_1", "call_2", "call_3"]) await pay({}, { requestId: id })
      const ids = async (o: { limit?: number; cursor?: string }) => {
        const out: string[] = []
        for await (const e of storage.list(o)) out.push(e.requestId)
        return out
      }
      expect(await ids({ limit: 3 })).toEqual(["call_1", "call_2", "call_3"])
      const first = await ids({ limit: 2 })
      expect(first).toEqual(["call_1", "call_2"])
      expect(await ids({ limit: 2, cursor: first.at(-1) as string })).toEqual(["call_3"])
      if (storage instanceof RedisLedgerStorage) await storage.close()
    })
  }
})
