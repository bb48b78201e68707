// The HTTP clients and the Redis store check their options when built. A NaN maxResponseBytes capped nothing (a
// 20 MB answer read whole), a missing or misnamed URL threw a bare TypeError ("reading 'replace'"), and a Redis
// timeoutMs of 0, NaN, Infinity or 1e12 failed every command (NaN: a 1 ms timer).
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { InvalidOptionError } from "../../src/core/index.ts"
import { LedgerPollTimeoutError } from "../../src/core/ledger/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const clients = {
  RemoteLedger: (o: object) => new RemoteLedger({ baseUrl: "http://edge.test", ...o } as never),
  HttpLedgerStorage: (o: object) => new HttpLedgerStorage({ url: "http://edge.test", ...o } as never),
}

describe("HTTP client and Redis store options", () => {
  it.each(Object.entries(clients))(
    "%s refuses a maxResponseBytes that is not a whole number >= 1",
    (_, make) => {
      for (const m of [Number.NaN, 0, -1, 1.5, Number.POSITIVE_INFINITY, "1MB"]) {
        expect(() => make({ maxResponseBytes: m }), String(m)).toThrow(InvalidOptionError)
        expect(() => make({ maxResponseBytes: m }), String(m)).toThrow("maxResponseBytes")
      }
      expect(() => make({ maxResponseBytes: 1000 })).not.toThrow()
    },
  )

  it("refuses a missing or misnamed URL with InvalidOptionError naming the option", () => {
    const cases: [() => unknown, string][] = [
      [() => new RemoteLedger({ url: "http://x" } as never), "baseUrl"],
      [() => new RemoteLedger({ baseUrl: 5 } as never), "baseUrl"],
      [() => new HttpLedgerStorage({ baseUrl: "http://x" } as never), "url"],
      [() => new HttpLedgerStorage("http://x" as never), "url"],
    ]
    for (const [make, name] of cases) {
      expect(make, name).toThrow(InvalidOptionError)
      expect(make, name).toThrow(`${name} must be`)
    }
  })

  it("RedisLedgerStorage refuses a timeoutMs not above 0 and at most a day", () => {
    for (const t of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e12, "5000"]) {
      const make = () =>
        new RedisLedgerStorage({ url: "redis://127.0.0.1:6379", prefix: "fix39:", timeoutMs: t as number })
      expect(make, String(t)).toThrow(InvalidOptionError)
      expect(make, String(t)).toThrow("timeoutMs")
    }
    // Building opens no connection: no server is needed to take a sane one.
    expect(() => new RedisLedgerStorage({ url: "redis://127.0.0.1:1", timeoutMs: 86_400_000 })).not.toThrow()
  })
})

describe("RemoteLedger.tool() keeps the options it was made with", () => {
  it("a pollInterval set to NaN after tool() is not read at each poll (it made the client busy-poll)", async () => {
    let posts = 0
    const fetch = (async () => {
      posts++
      return new Response(JSON.stringify({ status: "poll", retry_after: 1 }), {
        headers: { "content-type": "application/json" },
      })
    }) as typeof globalThis.fetch
    const ledger = new RemoteLedger({
      baseUrl: "http://x.invalid",
      fetch,
      pollTimeout: 1,
      onWarning: () => {},
    })
    const options: { name: string; pollInterval?: number } = { name: "pay", pollInterval: 0.5 }
    const pay = ledger.tool(options, async () => 1)
    options.pollInterval = Number.NaN
    await expect(pay({ a: 1 }, { requestId: "r1" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    // One begin, then a poll every 0.5 s within the 1 s poll timeout.
    expect(posts).toBeLessThanOrEqual(4)
  })
})
