// A ledger API that accepts the connection and then never answers, or sends its headers and trickles the body, is an
// outage: the HTTP clients must fail closed with a typed error after `requestTimeout`, and the tool body must not
// run. Real sockets (node:http), because the limit has to cover the body read, not only the headers.
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger, InvalidOptionError } from "../../src/core/index.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

let server: Server
let base = ""
const open = new Set<{ destroy(): void }>()

beforeAll(async () => {
  server = createServer((req, res) => {
    open.add(res.socket as { destroy(): void })
    if (req.url?.startsWith("/silent")) return // headers never come
    // Headers at once, then one byte of a JSON body every 200 ms, for ever.
    res.writeHead(200, { "content-type": "application/json" })
    const timer = setInterval(() => res.write(" "), 200)
    res.on("close", () => clearInterval(timer))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  for (const s of open) s.destroy()
  await new Promise((r) => server.close(r))
})

/** Runs `p`, returning what it threw and how long it took. */
async function timed(p: () => Promise<unknown>) {
  const t0 = Date.now()
  const error = await p().then(
    () => null,
    (e: unknown) => e,
  )
  return { error, ms: Date.now() - t0 }
}

describe("RemoteLedger against a server that hangs", () => {
  for (const path of ["/silent", "/trickle"]) {
    it(`${path}: the call fails closed after requestTimeout and the body never runs`, async () => {
      let runs = 0
      const ledger = new RemoteLedger({ baseUrl: `${base}${path}`, requestTimeout: 0.5, onWarning: () => {} })
      const call = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
      const { error, ms } = await timed(() => call({ amount: 1 }, { requestId: "r-1" }))
      expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
      expect((error as Error).message).toContain("no whole answer within 0.5 s (requestTimeout)")
      expect(runs).toBe(0)
      expect(ms).toBeGreaterThanOrEqual(450)
      expect(ms).toBeLessThan(5000)
    }, 10_000)
  }
})

describe("HttpLedgerStorage against a server that hangs", () => {
  for (const path of ["/silent", "/trickle"]) {
    it(`${path}: get() fails with 'unreachable'; through a ledger, LedgerStorageUnavailableError`, async () => {
      const storage = new HttpLedgerStorage({ url: `${base}${path}`, requestTimeout: 0.5 })
      const direct = await timed(() => storage.get("r-1"))
      expect(direct.error).toMatchObject({ code: "unreachable" })
      expect(direct.ms).toBeLessThan(5000)
      let runs = 0
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      const call = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
      const viaLedger = await timed(() => call({ amount: 1 }, { requestId: "r-1" }))
      expect(viaLedger.error).toBeInstanceOf(LedgerStorageUnavailableError)
      expect(runs).toBe(0)
      expect(viaLedger.ms).toBeLessThan(5000)
    }, 10_000)
  }
})

describe("requestTimeout is checked when the client is made", () => {
  // 86,401 s and 35 days: a timer past 2^31 ms fires at once, so such a limit would fail every request.
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "5" as unknown as number, 86_401, 3e6]) {
    it(`${String(bad)} is refused`, () => {
      expect(() => new RemoteLedger({ baseUrl: base, requestTimeout: bad })).toThrow(InvalidOptionError)
      expect(() => new HttpLedgerStorage({ url: base, requestTimeout: bad })).toThrow(InvalidOptionError)
    })
  }
  it("null waits without a limit; the default is 30 s", () => {
    expect(() => new RemoteLedger({ baseUrl: base, requestTimeout: null })).not.toThrow()
    expect(() => new HttpLedgerStorage({ url: base })).not.toThrow()
  })
})
