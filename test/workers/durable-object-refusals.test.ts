// A row SQLite refuses (over its 2 MB value limit) through the Durable Object client, for every write path: the
// object hands the refusal back as a value, and the client must throw it. A claim swallowed as `claimed` gave one
// request id to every owner that asked; a transition swallowed as `true` told the caller an outcome was stored
// while the row stayed IN_FLIGHT.
import { env } from "cloudflare:workers"
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { DurableObjectLedgerStorage, type LedgerObjectNamespace } from "../../src/adapters/durable-object.ts"
import { MyceliumError } from "../../src/core/errors.ts"
import { ActionLedger, LedgerConfigError, type LedgerEntry } from "../../src/core/index.ts"

const LEDGER = (env as unknown as { LEDGER: LedgerObjectNamespace }).LEDGER
const run = `r${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
const TOO_BIG = "x".repeat(3 * 1024 * 1024)

// Today the client rethrows the refusal as a plain Error carrying SQLite's message (see written()).
async function refusal(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    (v) => v,
    (err: unknown) => err,
  )
  expect(e).toBeInstanceOf(Error)
  expect(e).not.toBeInstanceOf(MyceliumError)
  expect((e as Error).name).toBe("Error")
  expect((e as Error).message).toMatch(/SQLITE_TOOBIG/)
  return e as Error
}

describe("rows SQLite refuses, through the Durable Object client", () => {
  it("a claim over the store's limits is refused by the client, typed, for every owner; the object hands SQLite's own refusal back; no row", async () => {
    const name = `claim-${run}`
    const s = new DurableObjectLedgerStorage(LEDGER, { name })
    const now = Date.now() / 1000
    const claimOf = (owner: string) => ({
      ...newEntry({ requestId: "rid", tool: "pay", owner }, now),
      kwargs: { memo: TOO_BIG },
    })
    for (const owner of ["w1", "w2"])
      await expect(s.tryClaimInflight(claimOf(owner), 60, now)).rejects.toBeInstanceOf(LedgerConfigError)
    // Past the client (the object's RPC called as another client would), the refusal is a value, never `claimed`.
    const object = LEDGER.get(LEDGER.idFromName(name)) as {
      ledgerClaim(e: LedgerEntry, ttl: number, now: number): Promise<unknown>
    }
    for (const owner of ["w1", "w2"])
      expect(await object.ledgerClaim(claimOf(owner), 60, now)).toMatchObject({
        sqliteRefused: expect.stringMatching(/SQLITE_TOOBIG/),
      })
    expect(await s.get("rid")).toBeNull()
  })

  it("arguments leaving no room under 1.9 MB for a failure's text are refused before the claim; the body never runs", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: `room-${run}` })
    const ledger = new ActionLedger({ storage: s, onWarning: () => {} })
    let runs = 0
    const upload = ledger.tool(
      { name: "upload", binding: { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" } },
      async () => {
        runs++
        throw new Error(`provider said: ${"e".repeat(5000)}`)
      },
    )
    await expect(upload({ blob: "x".repeat(1_900_000 - 8000) }, { requestId: "up" })).rejects.toBeInstanceOf(
      LedgerConfigError,
    )
    expect(runs).toBe(0)
    expect(await s.get("up")).toBeNull()
    // With room left, the failure is recorded.
    await expect(upload({ blob: "x".repeat(1_800_000) }, { requestId: "up2" })).rejects.toThrow(
      "provider said",
    )
    expect((await s.get("up2"))?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(runs).toBe(1)
  })

  it("a transition SQLite refuses throws and the row stays IN_FLIGHT", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: `transition-${run}` })
    const now = Date.now() / 1000
    const r = await s.tryClaimInflight(newEntry({ requestId: "rid", tool: "pay", owner: "w" }, now), 60, now)
    if (r.outcome !== "claimed") throw new Error(`claim answered ${r.outcome}`)
    const next = { ...r.entry, terminalOutcome: "FAILED_BEFORE_EFFECT" as const, error: `Error: ${TOO_BIG}` }
    await refusal(s.tryTransition(next, { outcomes: ["IN_FLIGHT"], owner: "w", fence: r.entry.fence }))
    const row = await s.get("rid")
    expect([row?.terminalOutcome, row?.fence]).toEqual(["IN_FLIGHT", r.entry.fence])
  })

  it("a set SQLite refuses throws SQLite's error, not a stale-fence one", async () => {
    const s = new DurableObjectLedgerStorage(LEDGER, { name: `set-${run}` })
    await refusal(s.set(newEntry({ requestId: "rid", tool: "t", result: TOO_BIG }, 1)))
    expect(await s.get("rid")).toBeNull()
  })
})
