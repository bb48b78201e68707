// Both HTTP clients facing a server that lies (a compromised proxy, a server of another version): the real app
// behind a real socket (node:http) whose answers a test may rewrite. A claim answered for a row this call did not
// write must never run the tool; a server's error text reaches logs and the model only bounded and without control
// characters; a token fetch cannot send never appears in an error.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpLedgerStorage, LedgerHttpError } from "../../src/adapters/http.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { LedgerHardBlockError, LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { RemoteLedger, RemoteLedgerError } from "../../src/edge/client.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

/** What the server answers: the real app's answer (as text) by default; `real` asks the app. */
type Answer = (
  req: IncomingMessage,
  real: () => Promise<{ status: number; text: string }>,
) => Promise<{ status: number; text: string } | null>
let answer: Answer = async (_req, real) => real()
let app = createLedgerApp({ storage: new MemoryLedgerStorage() })
let requests = 0
let server: Server
let base = ""

beforeAll(async () => {
  server = createServer(async (req, res: ServerResponse) => {
    requests++
    let body = ""
    for await (const chunk of req) body += chunk
    const real = async () => {
      const r = await app.fetch(
        new Request(`http://x${req.url}`, {
          method: req.method as string,
          headers: { "content-type": "application/json" },
          ...(req.method === "GET" ? {} : { body }),
        }),
      )
      return { status: r.status, text: await r.text() }
    }
    const a = await answer(req, real)
    if (!a) return void res.destroy()
    res.writeHead(a.status, { "content-type": "application/json" })
    res.end(a.text)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
})

/** A fresh app, answered through `a`. */
function serve(a: Answer = async (_req, real) => real()) {
  app = createLedgerApp({ storage: new MemoryLedgerStorage() })
  answer = a
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a failure")
    },
    (e: unknown) => e as Error & { code?: unknown },
  )

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

/** Text a model or a log may be given: bounded, well-formed, no control character but tab and line feed. */
function expectTame(text: string, max = 4096) {
  expect(text.length).toBeLessThanOrEqual(max)
  expect(text.isWellFormed()).toBe(true)
  expect(text).not.toMatch(CONTROL)
}

describe("HttpLedgerStorage: a claim answered for a row this call did not write", () => {
  it("another worker's in-flight row answered as 'claimed': the tool runs once, not beside it", async () => {
    // The holder's claim is real; the second worker's claim (the server said in_flight) comes back "claimed".
    serve(async (req, real) => {
      const r = await real()
      return req.url === "/v1/rows/r1/claim" ? { ...r, text: r.text.replace('"in_flight"', '"claimed"') } : r
    })
    let runs = 0
    let release = () => {}
    const held = new Promise<void>((r) => {
      release = r
    })
    const ledger = (owner: string) =>
      new ActionLedger({ storage: new HttpLedgerStorage({ url: base }), owner, onWarning: () => {} })
    // The holder's body waits for the test; another's would return at once (it must not start at all).
    const tool = (l: ActionLedger, wait: Promise<void>) =>
      l.tool({ name: "pay", binding: pay }, async () => {
        runs++
        await wait
        return "paid"
      })
    const first = tool(ledger("worker-1"), held)({ amount: 1 }, { requestId: "r1" })
    while (runs === 0) await new Promise((r) => setTimeout(r, 5))
    const second = await failure(
      tool(ledger("worker-2"), Promise.resolve())({ amount: 1 }, { requestId: "r1" }),
    )
    expect(second).toBeInstanceOf(LedgerStorageUnavailableError)
    expect((second.cause as LedgerHttpError).code).toBe("invalid_response")
    release()
    expect(await first).toBe("paid")
    expect(runs).toBe(1)
  })

  it("the same ledger's second call answered as 'claimed' (one owner): told apart by its start time", async () => {
    serve(async (req, real) => {
      const r = await real()
      return req.url === "/v1/rows/r4/claim" ? { ...r, text: r.text.replace('"in_flight"', '"claimed"') } : r
    })
    let runs = 0
    let release = () => {}
    const held = new Promise<void>((r) => {
      release = r
    })
    const ledger = new ActionLedger({ storage: new HttpLedgerStorage({ url: base }), onWarning: () => {} })
    const t = ledger.tool({ name: "pay", binding: pay }, async () => {
      runs++
      await held
      return "paid"
    })
    const first = t({ amount: 1 }, { requestId: "r4" })
    while (runs === 0) await new Promise((r) => setTimeout(r, 5))
    const second = await failure(t({ amount: 1 }, { requestId: "r4" }))
    expect(second).toBeInstanceOf(LedgerStorageUnavailableError)
    release()
    expect(await first).toBe("paid")
    expect(runs).toBe(1)
  })

  it("a claim answered with a fence past 2^53 (read as another number): the tool never runs", async () => {
    serve(async (req, real) => {
      const r = await real()
      return req.url === "/v1/rows/r2/claim"
        ? { ...r, text: r.text.replace('"fence":1,', '"fence":9007199254740993,') }
        : r
    })
    let runs = 0
    const ledger = new ActionLedger({ storage: new HttpLedgerStorage({ url: base }), onWarning: () => {} })
    const e = await failure(
      ledger.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "r2" }),
    )
    expect(e).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(runs).toBe(0)
  })

  it("the untampered server: one run, then the replay", async () => {
    serve()
    let runs = 0
    const ledger = new ActionLedger({ storage: new HttpLedgerStorage({ url: base }), onWarning: () => {} })
    const t = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
    expect([await t({}, { requestId: "r3" }), await t({}, { requestId: "r3" }), runs]).toEqual([1, 1, 1])
  })

  it("a list or dispatch answer holding a null row is invalid_response, not a TypeError", async () => {
    serve(async () => ({ status: 200, text: '{"rows":[null],"cursor":null}' }))
    const s = new HttpLedgerStorage({ url: base })
    const walk = async () => {
      for await (const _ of s.list()) {
        // refused before any row
      }
    }
    expect(await failure(walk())).toMatchObject({ code: "invalid_response" })
    expect(await failure(s.findByDispatchId("d"))).toMatchObject({ code: "invalid_response" })
  })
})

describe("a server's error text", () => {
  const huge = `${"\u001b[2J".repeat(10)}${"x".repeat(5_000_000)}\ud800\u0000`
  const envelope = (code: unknown, message: unknown) => JSON.stringify({ error: { code, message } })

  it("RemoteLedger: a 5 MB message with escapes, and a code that is no code, reach the caller bounded", async () => {
    let runs = 0
    const call = (status: number, text: string) => {
      serve(async () => ({ status, text }))
      const ledger = new RemoteLedger({ baseUrl: base, onWarning: () => {} })
      return failure(ledger.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "e1" }))
    }
    // A 500 whose code is 5 MB of text: no code, so the gateway's outage.
    const outage = await call(500, envelope("x".repeat(5_000_000), huge))
    expect(outage).toBeInstanceOf(LedgerStorageUnavailableError)
    expectTame(outage.message)
    const refused = await call(409, envelope("Not A Code!", huge))
    expect(refused).toBeInstanceOf(RemoteLedgerError)
    expect(refused.code).toBe("http_error")
    expectTame(refused.message)
    const blocked = await call(
      200,
      JSON.stringify({ status: "blocked", error: { code: "ledger_hard_block", message: huge } }),
    )
    expect(blocked).toBeInstanceOf(LedgerHardBlockError)
    expectTame(blocked.message)
    const other = await call(200, JSON.stringify({ status: "x".repeat(5_000_000) }))
    expect(other).toBeInstanceOf(LedgerStorageUnavailableError)
    expectTame(other.message)
    expect(runs).toBe(0)
  })

  it("HttpLedgerStorage: the same, directly and through a ledger", async () => {
    const s = new HttpLedgerStorage({ url: base })
    serve(async () => ({ status: 500, text: envelope({ toString: 1 }, huge) }))
    const direct = await failure(s.get("e2"))
    expect(direct).toBeInstanceOf(LedgerHttpError)
    expect(direct.code).toBe("http_error")
    expectTame(direct.message)
    const ledger = new ActionLedger({ storage: s, onWarning: () => {} })
    let runs = 0
    const viaLedger = await failure(
      ledger.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "e2" }),
    )
    expect(viaLedger).toBeInstanceOf(LedgerStorageUnavailableError)
    // The ledger's outage error names the operation before the store's text.
    expectTame(viaLedger.message, 4200)
    serve(async () => ({ status: 200, text: JSON.stringify({ outcome: "x".repeat(5_000_000), entry: {} }) }))
    expectTame(
      (await failure(ledger.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "e3" })))
        .message,
      4200,
    )
    expect(runs).toBe(0)
  })
})

describe("a token fetch cannot send never reaches an error message", () => {
  // fetch refuses such a header with a message quoting its value whole.
  for (const [label, token] of [
    ["a token holding a line break", "eyJhbGciOi.secret\npart"],
    ["a token function whose token holds CR", () => "eyJhbGciOi.secret\rpart"],
  ] as const) {
    it(`${label}: the request fails closed before it is sent, the token nowhere in the error`, async () => {
      serve()
      const before = requests
      const remote = new RemoteLedger({ baseUrl: base, token, onWarning: () => {} })
      let runs = 0
      const e = await failure(
        remote.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "t1" }),
      )
      expect(e).toBeInstanceOf(LedgerStorageUnavailableError)
      const direct = await failure(new HttpLedgerStorage({ url: base, token }).get("t1"))
      expect(direct).toMatchObject({ code: "unreachable" })
      for (const err of [e, direct])
        expect(`${err.message} ${String((err.cause as Error)?.message)}`).not.toContain("secret")
      expect([runs, requests - before]).toEqual([0, 0])
    })
  }

  it("a trailing line break (a token read from a file) is sent, as fetch trims it", async () => {
    serve()
    const remote = new RemoteLedger({ baseUrl: base, token: "tok\n", onWarning: () => {} })
    expect(await remote.tool({ name: "pay", binding: pay }, async () => "ok")({}, { requestId: "t2" })).toBe(
      "ok",
    )
  })
})

describe("a server's internal error", () => {
  it("RemoteLedger: a 500 internal_error on the completion is an outage, not a refusal; the tool ran once", async () => {
    serve(async (req, real) =>
      req.url?.endsWith("/complete")
        ? {
            status: 500,
            text: JSON.stringify({ error: { code: "internal_error", message: "internal error" } }),
          }
        : real(),
    )
    let runs = 0
    const ledger = new RemoteLedger({ baseUrl: base, onWarning: () => {} })
    const e = await failure(
      ledger.tool({ name: "pay", binding: pay }, async () => ++runs)({}, { requestId: "i1" }),
    )
    expect(e).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(e.message).toContain("ledger API failed (HTTP 500)")
    expect(runs).toBe(1)
  })
})
