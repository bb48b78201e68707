// HttpLedgerStorage reads "no such row" only from the row route's own 404. A proxy or load balancer answering its
// own 404 page (a wrong base path, a deploy in progress), or the app answering for a route it does not have, made
// get() null: a read of a stored row then said it was never claimed (waitForTransition: ledger_unknown_request,
// release: "no such request"). Those are outages now.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage, LedgerHttpError } from "../../src/adapters/http.ts"
import { ActionLedger, LedgerStorageUnavailableError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
const viaApp = (async (input: RequestInfo | URL, init?: RequestInit) =>
  app.fetch(new Request(input, init))) as typeof fetch
const answering = (res: () => Response) => (async () => res()) as typeof fetch

async function expectOutage(fetch: typeof globalThis.fetch, url = "http://x") {
  const storage = new HttpLedgerStorage({ url, fetch })
  await expect(storage.get("charge:42")).rejects.toBeInstanceOf(LedgerHttpError)
  const ledger = new ActionLedger({ storage, onWarning: () => {} })
  await expect(ledger.get("charge:42")).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
  await expect(ledger.waitForTransition("charge:42", { pollTimeout: 1 })).rejects.toBeInstanceOf(
    LedgerStorageUnavailableError,
  )
  await expect(
    ledger.release("charge:42", { verified: "not_executed", by: "ops", reason: "r" }),
  ).rejects.toBeInstanceOf(LedgerStorageUnavailableError)
}

describe("HttpLedgerStorage: which 404 means 'no such row'", () => {
  it("the row route's own 404 is an absent row", async () => {
    const storage = new HttpLedgerStorage({ url: "http://x", fetch: viaApp })
    expect(await storage.get("never-claimed")).toBeNull()
  })

  it("a proxy's HTML 404 page is an outage", async () => {
    await expectOutage(
      answering(() => new Response("<html><body>404 Not Found</body></html>", { status: 404 })),
    )
  })

  it("the app's 404 for a route it does not have (a wrong base path) is an outage", async () => {
    await expectOutage(viaApp, "http://x/wrong-base")
  })

  it("a JSON 404 with any other body is an outage", async () => {
    await expectOutage(
      answering(() => Response.json({ error: { code: "gone", message: "x" } }, { status: 404 })),
    )
    await expectOutage(answering(() => Response.json({ message: "Not Found" }, { status: 404 })))
    await expectOutage(answering(() => Response.json(null, { status: 404 })))
  })
})
