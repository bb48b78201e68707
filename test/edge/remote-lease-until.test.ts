// RemoteLedger refuses to start an effect once its lease lapsed by its own clock (test/edge/remote-late-effect.test.ts).
// Its reckoning of when that is must never be later than the server's: a renewal is capped by the server's
// maxLeaseTtl, and the server stamps a lease when it writes, before its answer's trip back.
import { describe, expect, it } from "vitest"
import { LedgerLeaseError, type LedgerStorage, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A client whose answers to `route` (once each, in order) come back `delays[i]` ms late. */
function world(app: ReturnType<typeof createLedgerApp>, delays: Record<string, number[]>) {
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await app.fetch(new Request(input, init))
    const route = String(input).split("/").pop() as string
    const ms = delays[route]?.shift()
    if (ms) await sleep(ms)
    return res
  }) as typeof globalThis.fetch
  // No automatic renewal: the body renews itself.
  return new RemoteLedger({ baseUrl: "http://edge.test", fetch, leaseRenewInterval: 0, onWarning: () => {} })
}

describe("RemoteLedger's own-clock lease", () => {
  it("a renewal beyond the server's maxLeaseTtl is reckoned as the server capped it", async () => {
    const storage: LedgerStorage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, maxLeaseTtl: 0.3 })
    const effects: string[] = []
    const charge = world(app, { boundary: [700] }).tool(
      { name: "charge", binding, leaseTtl: 0.3 },
      async (_a: { n: number }, tx) => {
        // The server renews by 0.3 s, its cap; the client took it for 60 s.
        await tx.renewLease(60)
        return tx.sideEffect(() => effects.push("late"))
      },
    )
    const late = await charge({ n: 1 }, { requestId: "charge:cap" }).catch((e: unknown) => e)
    // The boundary answer came back 0.7 s after the server wrote it: the 0.3 s lease had lapsed.
    expect(effects).toEqual([])
    expect(late).toBeInstanceOf(LedgerLeaseError)
  }, 10_000)

  it("a renewal answered late is reckoned from when it was sent", async () => {
    const storage: LedgerStorage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage })
    const effects: string[] = []
    // The renewal's answer takes 0.35 s to come back, the boundary write's 0.3 s: the server's lease (0.4 s from the
    // renewal it wrote at once) lapsed 0.25 s before the client learned the boundary was written.
    const charge = world(app, { renew: [350], boundary: [300] }).tool(
      { name: "charge", binding, leaseTtl: 0.4 },
      async (_a: { n: number }, tx) => {
        await tx.renewLease()
        return tx.sideEffect(() => effects.push("late"))
      },
    )
    const late = await charge({ n: 1 }, { requestId: "charge:slow" }).catch((e: unknown) => e)
    expect(effects).toEqual([])
    expect(late).toBeInstanceOf(LedgerLeaseError)
    // The refusal leaves the row for reconciliation, never released as not run.
    const row = await storage.get("charge:slow")
    expect(row?.sideEffectBoundary).toBe("maybe_crossed")
  }, 10_000)
})
