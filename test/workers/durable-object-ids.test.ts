// Request ids the Durable Object ledger keeps, in workerd. SQLite's 2 MB is on a whole row: the key column beside the
// payload, which holds the id four times (request_id, kwargs.request_id, idempotency_key, effect_id). The ledger
// measured a result against maxRowBytes on the entry's JSON alone, so a 400 K id (built from a business-key argument)
// and a result within the limit made a row SQLite refused after the effect ran: the completion failed as an outage
// and the row stayed IN_FLIGHT, to run again once its lease lapsed. An id is now held to 16 Ki characters.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { ActionLedger, LedgerConfigError } from "../../src/core/index.ts"
import { expectIdRefusedUnsent } from "../adapters/id-refusals.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
let n = 0
const fresh = (label: string) => `${label}-${Date.now().toString(36)}-${n++}`
const utf8 = new TextEncoder()

describe("Durable Object ledger: ids SQLite keys apart", () => {
  it("two ids differing only in an unpaired surrogate are two rows", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: fresh("sur") })
    const now = Date.now() / 1000
    const a = await s.tryClaimInflight(
      newEntry({ requestId: "pay-\ud800", tool: "t", owner: "A" }, now),
      60,
      now,
    )
    const b = await s.tryClaimInflight(
      newEntry({ requestId: "pay-\ud801", tool: "t", owner: "B" }, now),
      60,
      now,
    )
    expect(a.outcome).toBe("claimed")
    expect(b.outcome).toBe("claimed")
    expect((await s.get("pay-\ud800"))?.requestId).toBe("pay-\ud800")
    expect((await s.get("pay-\ud801"))?.requestId).toBe("pay-\ud801")
    const ids: string[] = []
    for await (const e of s.list({ prefix: "pay-" })) ids.push(e.requestId)
    expect(ids.length).toBe(2)
  })
})

describe("Durable Object ledger: an id's share of SQLite's row limit", () => {
  it("a completion within the declared limits is never a bare failure after the effect (a 400 K id is refused first)", async () => {
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: fresh("rowlimit") })
    const ledger = new ActionLedger({ storage, leaseTtl: 60, owner: "w", onWarning: () => {} })
    const requestId = `k:${"i".repeat(400_000)}`
    // Before: claimed, then the completion (a 250 K result, the entry's JSON under 1.9 MB) failed with
    // LedgerStorageUnavailableError (SQLITE_TOOBIG) and the row stayed IN_FLIGHT.
    const e = await ledger.claim({ tool: "t", requestId }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(LedgerConfigError)
    expect(await storage.get(requestId)).toBeNull()
    const rows: string[] = []
    for await (const r of storage.list()) rows.push(r.requestId)
    expect(rows).toEqual([])
  })

  it("a claim of a 450 K id is refused before the write (LedgerConfigError), not an outage", async () => {
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: fresh("claimlimit") })
    const ledger = new ActionLedger({ storage, leaseTtl: 60, owner: "w", onWarning: () => {} })
    // Before: it passed refuseUnkeepableClaim and the claim's write failed as a retryable outage.
    const e = await ledger
      .claim({ tool: "t", requestId: `k:${"i".repeat(450_000)}` })
      .catch((x: unknown) => x)
    expect(String(e).slice(0, 160)).toMatch(/^LedgerConfigError/)
    expect(e).toBeInstanceOf(LedgerConfigError)
  })

  it("an id over 16 Ki characters is refused by every write, before any RPC, and named by no row", async () => {
    let rpcs = 0
    const counted: LedgerObjectNamespace = {
      idFromName: (name) => LEDGER.idFromName(name),
      get: (id) => {
        rpcs++
        return LEDGER.get(id)
      },
    }
    const storage = new DurableObjectLedgerStorage(counted, { name: fresh("bound"), shards: 2 })
    const row = await expectIdRefusedUnsent(storage, "x".repeat(16_385), () => rpcs)
    // The longest id is kept.
    const longest = "x".repeat(16_384)
    const claimed = await storage.tryClaimInflight({ ...row, requestId: longest }, 60, 1)
    expect(claimed.outcome).toBe("claimed")
    expect((await storage.get(longest))?.requestId).toBe(longest)
  })

  it("the longest id of 3-byte characters and a result up to maxRowBytes are written: the margin holds the key", async () => {
    const storage = new DurableObjectLedgerStorage(LEDGER, { name: fresh("margin") })
    const ledger = new ActionLedger({ storage, leaseTtl: 60, owner: "w", onWarning: () => {} })
    const requestId = "€".repeat(16_384)
    const c = await ledger.claim({ tool: "t", requestId })
    expect(c.owned).toBe(true)
    const max = storage.limits.maxRowBytes as number
    // What the ledger measures (the completed entry's JSON), brought to just under the limit.
    const base = utf8.encode(JSON.stringify({ ...c.entry, terminalOutcome: "COMPLETED", result: "" })).length
    const result = "r".repeat(max - base - 200)
    const done = await ledger.complete(requestId, result, { fence: c.entry.fence, owner: "w" })
    expect(done.terminalOutcome).toBe("COMPLETED")
    const stored = await storage.get(requestId)
    expect(stored?.terminalOutcome).toBe("COMPLETED")
    expect(stored?.result).toBe(result)
  })
})
