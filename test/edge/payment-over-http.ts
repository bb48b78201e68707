// HttpLedgerStorage against the real edge app on a memory store, counting the requests that reach it, and a ledger
// over it with one payment keyed by its `orderId` argument (requestIdFrom).
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

export function storeOverHttp() {
  const rows = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage: rows })
  let requests = 0
  const fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    requests++
    return app.fetch(new Request(input, init))
  }) as typeof globalThis.fetch
  return { rows, storage: new HttpLedgerStorage({ url: "http://l", fetch }), requests: () => requests }
}

export function paymentOverHttp() {
  const { rows, storage, requests } = storeOverHttp()
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  let runs = 0
  const binding = {
    agentId: "a",
    policyVersion: "p",
    sideEffectClass: "keyed_mutate",
    requestIdFrom: "orderId",
  } as const
  const pay = ledger.tool({ name: "pay", binding }, async () => ++runs)
  return { rows, pay, runs: () => runs, requests }
}
