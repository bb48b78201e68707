// HttpLedgerStorage takes only each route's own answer. A 200 `{}` or `null` (a proxy, a wrong route answering
// JSON) made set() resolve with nothing written and get() read "no such row"; a 200 error envelope was a success;
// and fetch followed redirects: a 303 turned the PUT into a GET, a 307 sent the row and token to another origin.
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { entryToRow, newEntry } from "../../src/adapter-kit.ts"
import { HttpLedgerStorage, LedgerHttpError } from "../../src/adapters/http.ts"
import {
  ActionLedger,
  LedgerStaleFenceError,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const entry = newEntry({ requestId: "r1", tool: "charge", fence: 3 }, 1_000)
const answering = (body: unknown, status = 200) =>
  new HttpLedgerStorage({
    url: "http://x",
    fetch: (async () => Response.json(body, { status })) as typeof fetch,
  })
const invalid = { code: "invalid_response" }

/** Every route of the store, called once. */
const routes = (s: HttpLedgerStorage): Record<string, () => Promise<unknown>> => ({
  get: () => s.get("r1"),
  set: () => s.set(entry),
  claim: () => s.tryClaimInflight(entry, 60, 1_000),
  transition: () => s.tryTransition(entry, { outcomes: ["IN_FLIGHT"], fence: 3 }),
  list: async () => {
    for await (const _ of s.list()) {
      // the answer is refused before any row
    }
  },
  dispatch: () => s.findByDispatchId("d"),
})

describe("HttpLedgerStorage: only the route's own answer", () => {
  it("the real app's answers pass", async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    const s = new HttpLedgerStorage({
      url: "http://x",
      fetch: (async (input: RequestInfo | URL, init?: RequestInit) =>
        app.fetch(new Request(input, init))) as typeof fetch,
    })
    await s.set(entry)
    expect((await s.get("r1"))?.fence).toBe(3)
    expect(await s.get("absent")).toBeNull()
  })

  for (const body of [null, {}, [], "ok", 1]) {
    it(`a 200 ${JSON.stringify(body)} is invalid_response on every route, never "no row" or "written"`, async () => {
      for (const [name, call] of Object.entries(routes(answering(body)))) {
        await expect(call(), name).rejects.toMatchObject(invalid)
      }
    })
  }

  it("set() needs ok: true", async () => {
    for (const ok of [false, "true", 1, null]) {
      await expect(answering({ ok }).set(entry)).rejects.toMatchObject(invalid)
    }
  })

  it("a 200 error envelope is the refusal it carries", async () => {
    const refusal = { error: { code: "ledger_stale_fence", message: "refused" } }
    await expect(answering(refusal).set(entry)).rejects.toBeInstanceOf(LedgerStaleFenceError)
    await expect(answering({ ...refusal, row: null }).get("r1")).rejects.toMatchObject({
      code: "ledger_stale_fence",
    })
  })

  it("the ledger reads a 200 null row as an outage, not as a request never claimed", async () => {
    const ledger = new ActionLedger({ storage: answering(null), onWarning: () => {} })
    await expect(ledger.get("r1")).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
    await expect(ledger.waitForTransition("r1", { pollTimeout: 1 })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
  })
})

describe("HttpLedgerStorage does not follow redirects", () => {
  const seen: string[] = []
  let api: Server
  let other: Server
  let base = ""
  let elsewhere = ""
  const listen = async (s: Server) => {
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r))
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`
  }
  beforeAll(async () => {
    other = createServer((req, res) => {
      seen.push(`other ${req.method} ${req.headers.authorization}`)
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}')
    })
    elsewhere = await listen(other)
    api = createServer((req, res) => {
      seen.push(`api ${req.method} ${req.url}`)
      if (req.method === "PUT" && req.url?.startsWith("/see-other/"))
        return res.writeHead(303, { location: "/see-other/v1/rows/r1" }).end()
      if (req.method === "PUT") return res.writeHead(307, { location: `${elsewhere}${req.url}` }).end()
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true,"row":{"request_id":"r1"}}')
    })
    base = await listen(api)
  })
  afterAll(async () => {
    await new Promise((r) => api.close(r))
    await new Promise((r) => other.close(r))
  })

  it("a 303 (fetch would turn the PUT into a GET: nothing written) is refused", async () => {
    seen.length = 0
    const s = new HttpLedgerStorage({ url: `${base}/see-other`, token: "t" })
    const error = await s.set(entry).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LedgerHttpError)
    expect(error).toMatchObject({ code: "invalid_response", status: 303 })
    expect(seen).toEqual(["api PUT /see-other/v1/rows/r1"])
  })

  it("a 307 to another origin gets neither the row nor the token", async () => {
    seen.length = 0
    const s = new HttpLedgerStorage({ url: base, token: "secret" })
    await expect(s.set(entry)).rejects.toMatchObject({ code: "invalid_response", status: 307 })
    expect(seen).toEqual(["api PUT /v1/rows/r1"])
  })
})

describe("HttpLedgerStorage: rows and messages it cannot read fail closed, typed", () => {
  // The row reader and the 404 check called String() on them: a bare TypeError, no LedgerHttpError.
  const hostile = { toString: 0 }
  const row = (field: string) => ({ request_id: "r1", tool: "t", status: "completed", [field]: hostile })

  it("a row whose owner or error is {toString: 0}: invalid_response from get, list and findByDispatchId", async () => {
    for (const field of ["owner", "error"]) {
      await expect(answering({ row: row(field) }).get("r1")).rejects.toMatchObject(invalid)
      const listing = answering({ rows: [row(field)], cursor: null }).list()
      await expect(
        (async () => {
          for await (const _ of listing) {
            // refused at its first row
          }
        })(),
      ).rejects.toMatchObject(invalid)
      await expect(answering({ rows: [row(field)] }).findByDispatchId("d")).rejects.toMatchObject(invalid)
    }
  })

  it("a claim's dispatch siblings too", async () => {
    const claimed = { ...entry, terminalOutcome: "IN_FLIGHT" as const, fence: 1 }
    const s = answering({
      outcome: "claimed",
      entry: entryToRow(claimed),
      dispatch_siblings: [row("owner")],
    })
    await expect(s.tryClaimInflight(claimed, 60, 1_000, { dispatchId: "d" })).rejects.toMatchObject(invalid)
  })

  it("a 404 not_found whose message is {toString: 0} is an outage (LedgerHttpError), never 'no row'", async () => {
    const e = await answering({ error: { code: "not_found", message: hostile } }, 404)
      .get("r1")
      .catch((x: unknown) => x)
    expect(e).toBeInstanceOf(LedgerHttpError)
    expect(e).toMatchObject({ status: 404 })
  })
})
