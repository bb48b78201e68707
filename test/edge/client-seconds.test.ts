// RemoteLedger's seconds options and its poll wait. NaN (Number() of an unset env var) was taken: a pollTimeout of
// NaN never timed out, a pollInterval of NaN polled as fast as the server answered, a leaseRenewInterval of NaN
// renewed nothing. And each poll added an abort listener it never took off, on a signal it did not check first:
// an abort that landed during a poll request left the call polling.
import { getEventListeners } from "node:events"
import { describe, expect, it } from "vitest"
import { InvalidOptionError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

const label = (o: object) => Object.entries(o).map(([k, v]) => `${k}: ${String(v)}`)[0]

describe("RemoteLedger seconds options and polling", () => {
  it("refuses seconds options that are not numbers of seconds, as ActionLedger does", () => {
    const make = (o: object) => new RemoteLedger({ baseUrl: "http://edge.test", ...o })
    for (const o of [
      { pollTimeout: Number.NaN },
      { pollTimeout: "300" },
      { pollTimeout: -1 },
      { leaseRenewInterval: Number.NaN },
      { leaseTtl: Number.NaN },
    ])
      expect(() => make(o), label(o)).toThrow(InvalidOptionError)
    const remote = make({})
    for (const o of [
      { pollInterval: Number.NaN },
      { pollTimeout: Number.NaN },
      { leaseTtl: Number.POSITIVE_INFINITY },
    ])
      expect(() => remote.tool({ name: "pay", ...o }, () => 1), label(o)).toThrow(InvalidOptionError)
    expect(make({ pollTimeout: null, leaseRenewInterval: 0 }).pollTimeout).toBeNull()
  })

  it("refuses a leaseTtl of 0 or less at construction and per tool: the server takes lease_ttl > 0 only", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const fetch = ((i: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(i, init))) as typeof globalThis.fetch
    const make = (o: object) => new RemoteLedger({ baseUrl: "http://edge.test", fetch, ...o })
    for (const leaseTtl of [0, -1]) {
      expect(() => make({ leaseTtl }), `${leaseTtl}`).toThrow(/leaseTtl must be a number of seconds > 0/)
      expect(() => make({}).tool({ name: "pay", leaseTtl }, () => 1), `${leaseTtl}`).toThrow(
        InvalidOptionError,
      )
    }
    expect(
      await make({ leaseTtl: 0.5 }).tool({ name: "pay", binding }, async () => "paid")(
        {},
        { requestId: "o" },
      ),
    ).toBe("paid")
  })

  it("an abort during a poll request rejects the call at once, and polling holds one listener", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage(), pollInterval: 0.005 })
    let onPost = () => {}
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await app.fetch(new Request(input, init))
      onPost()
      return res
    }) as typeof globalThis.fetch
    const remote = new RemoteLedger({
      baseUrl: "http://edge.test",
      fetch,
      pollTimeout: null,
      onWarning: () => {},
    })
    let release = () => {}
    const held = new Promise<void>((r) => {
      release = r
    })
    const pay = remote.tool({ name: "pay", binding }, async () => {
      await held
      return "paid"
    })
    const first = pay({}, { requestId: "order-1" })
    await new Promise((r) => setTimeout(r, 20))

    const quiet = new AbortController()
    const waiting = pay({}, { requestId: "order-1", signal: quiet.signal })
    await new Promise((r) => setTimeout(r, 200))
    expect(getEventListeners(quiet.signal, "abort").length).toBeLessThanOrEqual(1)

    const ac = new AbortController()
    let posts = 0
    onPost = () => {
      if (++posts === 3) ac.abort(new Error("caller gave up"))
    }
    const aborted = pay({}, { requestId: "order-1", signal: ac.signal })
    const outcome = await Promise.race([
      aborted.then(
        () => "resolved",
        (e: Error) => e.message,
      ),
      new Promise((r) => setTimeout(() => r("still polling after 1 s"), 1000)),
    ])
    expect(outcome).toBe("caller gave up")
    onPost = () => {}
    release()
    expect(await first).toBe("paid")
    expect(await waiting).toBe("paid")
    expect(getEventListeners(quiet.signal, "abort")).toHaveLength(0)
  })
})
