// The HTTP clients' `token` option as a function: an identity provider that throws, hangs or answers something
// other than a string. Each is an outage of the request it was for: typed, within requestTimeout, and before any
// request goes out, so the tool body never runs.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { LedgerStorageUnavailableError } from "../../src/core/ledger/index.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const pay = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

/** The real app (no auth), counting the requests that reach it. */
function server() {
  const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
  let requests = 0
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    requests++
    return app.fetch(new Request(input, init))
  }) as typeof globalThis.fetch
  return { fetch, requests: () => requests }
}

const tokens: [string, () => string | Promise<string>, string][] = [
  [
    "throws",
    () => {
      throw new Error("idp down")
    },
    "idp down",
  ],
  ["rejects", () => Promise.reject(new Error("idp down")), "idp down"],
  ["answers undefined", () => undefined as unknown as string, "token function: no token"],
  ["answers an empty string", () => "", "token function: no token"],
  ["answers a number", () => 42 as unknown as string, "token function: no token"],
  ["never settles", () => new Promise<string>(() => {}), "token function: no token within requestTimeout"],
]

async function outcome(p: Promise<unknown>) {
  const t0 = Date.now()
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  )
  return { error, ms: Date.now() - t0 }
}

describe("RemoteLedger with a token function that fails", () => {
  for (const [label, token, message] of tokens)
    it(`${label}: a typed outage within requestTimeout, nothing sent, the body never runs`, async () => {
      const s = server()
      let runs = 0
      const ledger = new RemoteLedger({ baseUrl: "http://x", fetch: s.fetch, token, requestTimeout: 0.2 })
      const call = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
      const { error, ms } = await outcome(call({ amount: 1 }, { requestId: "order-1" }))
      expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
      expect((error as Error).message).toContain(message)
      expect(ms).toBeLessThan(3000)
      expect(runs).toBe(0)
      expect(s.requests()).toBe(0)
    })
})

describe("HttpLedgerStorage with a token function that fails", () => {
  for (const [label, token, message] of tokens)
    it(`${label}: 'unreachable' within requestTimeout; through a ledger, a storage outage`, async () => {
      const s = server()
      const storage = new HttpLedgerStorage({ url: "http://x", fetch: s.fetch, token, requestTimeout: 0.2 })
      const direct = await outcome(storage.get("order-1"))
      expect(direct.error).toMatchObject({ code: "unreachable" })
      expect((direct.error as Error).message).toContain(message)
      expect(direct.ms).toBeLessThan(3000)
      let runs = 0
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      const call = ledger.tool({ name: "pay", binding: pay }, async () => ++runs)
      expect((await outcome(call({ amount: 1 }, { requestId: "order-1" }))).error).toBeInstanceOf(
        LedgerStorageUnavailableError,
      )
      expect(runs).toBe(0)
      expect(s.requests()).toBe(0)
    })
})
