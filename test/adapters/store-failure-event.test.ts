// A driver that rejects with something that is no Error: the Neon serverless driver rejects a query with the
// WebSocket's error event when the socket is reset. The outage's message named it "object: [object Object]"; it
// names the event's class and what it says now.
import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  type LedgerEntry,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"

class ErrorEvent extends Event {
  readonly message = "read ECONNRESET"
}

async function outageFor(reason: unknown): Promise<string> {
  class Failing extends MemoryLedgerStorage {
    override async get(): Promise<LedgerEntry | null> {
      throw reason
    }
  }
  const e = await new ActionLedger({ storage: new Failing() }).get("charge:42").catch((x: unknown) => x)
  expect(e).toBeInstanceOf(LedgerStorageUnavailableError)
  return (e as Error).message
}

describe("a store's rejection that is no Error", () => {
  it("is described by its class and its message, code or type", async () => {
    expect(await outageFor(new ErrorEvent("error"))).toBe(
      "ledger storage unavailable during get: ErrorEvent: read ECONNRESET",
    )
    expect(await outageFor(new Event("error"))).toBe("ledger storage unavailable during get: Event: error")
    expect(await outageFor({ code: "ECONNRESET" })).toBe(
      "ledger storage unavailable during get: Object: ECONNRESET",
    )
    expect(await outageFor("boom")).toBe("ledger storage unavailable during get: String: boom")
    expect(await outageFor(new TypeError("fetch failed"))).toBe(
      "ledger storage unavailable during get: TypeError: fetch failed",
    )
  })
})
