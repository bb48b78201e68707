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

  it.each(Object.entries(clients))(
    "%s refuses a URL holding credentials when built, without quoting them",
    (name, make) => {
      // fetch refuses such a URL at every request, with a message quoting it whole: the client's error passed the
      // password on (into logs, and through a tool's error to a model).
      const option = name === "RemoteLedger" ? "baseUrl" : "url"
      for (const url of [
        "https://user:s3cret@edge.test/ledger",
        "https://s3cret@edge.test", // a username alone: fetch refuses it too
        "https:user:s3cret@edge.test", // no slashes: still the authority of an https URL
        "//user:s3cret@edge.test/ledger", // relative to the page: its own scheme
        " https://user:s3cret@edge.test ",
        "https://user:s3\tcret@edge.test", // tabs are dropped by the parser
        "https://user:s3cret@edge .test", // not a URL at all
      ]) {
        const err = (() => {
          try {
            make({ [option]: url })
          } catch (e) {
            return e
          }
        })()
        expect(err, url).toBeInstanceOf(InvalidOptionError)
        expect((err as Error).message, url).toBe(
          `${option} must be the ledger API's URL as a string, without credentials, query or fragment: pass a secret as the token`,
        )
      }
      for (const url of [
        "https://edge.test/ledger/",
        "/ledger",
        "https://edge.test/v@2",
        "http://[::1]:8787",
      ])
        expect(() => make({ [option]: url }), url).not.toThrow()
    },
  )

  it.each(Object.entries(clients))(
    "%s refuses a URL with a query or fragment when built, without quoting it",
    (name, make) => {
      // Each route's path is appended to the base URL's text: after `?token=…` or `#…` it landed in the query or
      // fragment (every call went to the base URL itself), and the errors that name the base URL quoted the token.
      const option = name === "RemoteLedger" ? "baseUrl" : "url"
      for (const url of [
        "https://edge.test/ledger?token=s3cret",
        "https://edge.test/?token=s3cret",
        "https://edge.test?s3cret",
        "https://edge.test/ledger#s3cret",
        "/ledger?token=s3cret",
        "https://edge.test/ledger?", // a bare `?`: the parser drops it, the joined text keeps it
        "https://edge.test/ledger#",
      ]) {
        const err = (() => {
          try {
            make({ [option]: url })
          } catch (e) {
            return e
          }
        })()
        expect(err, url).toBeInstanceOf(InvalidOptionError)
        expect((err as InvalidOptionError).code, url).toBe("invalid_option")
        expect((err as Error).message, url).not.toContain("s3cret")
        expect((err as Error).message, url).toContain(`${option} must be the ledger API's URL`)
      }
      // Percent-encoded, they are characters of the path.
      expect(() => make({ [option]: "https://edge.test/a%3Fb%23c" })).not.toThrow()
    },
  )

  it("a password in the URL reaches no error, not even through the first call's (fetch's own message quoted it)", async () => {
    const url = "http://user:s3cret@127.0.0.1:9"
    const texts: string[] = []
    const seen = (e: unknown) => {
      for (let x = e; x instanceof Error; x = x.cause) texts.push(x.message)
    }
    const calls: Array<() => Promise<unknown>> = [
      async () => new HttpLedgerStorage({ url }).get("r-1"),
      async () =>
        new RemoteLedger({ baseUrl: url, onWarning: () => {} }).tool({ name: "pay" }, async () => 1)(
          { a: 1 },
          { requestId: "r-1" },
        ),
    ]
    for (const call of calls) await call().then(() => texts.push("no error"), seen)
    expect(texts.join("\n")).not.toContain("s3cret")
    expect(texts).toHaveLength(2) // refused when built: no cause
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
