// HttpLedgerStorage.tryTransition takes only a boolean `ok`: a proxy's {"ok":"false"} is truthy, and taken as a won
// write it let the tool run its payment while the ledger never moved.
import { describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { ActionLedger, LedgerStorageUnavailableError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"

const entry = newEntry({ requestId: "r1", tool: "charge", fence: 3 }, 1_000)

describe("HttpLedgerStorage transition answers", () => {
  for (const ok of ["false", "true", 1, 0, null])
    it(`a transition answered {"ok":${JSON.stringify(ok)}} is invalid_response`, async () => {
      const s = new HttpLedgerStorage({
        url: "http://x",
        fetch: (async () => Response.json({ ok })) as typeof fetch,
      })
      await expect(s.tryTransition(entry, { outcomes: ["IN_FLIGHT"], fence: 3 })).rejects.toMatchObject({
        code: "invalid_response",
      })
    })

  it('a proxy answering every transition {"ok":"false"}: the call fails closed and the payment never runs', async () => {
    const app = createLedgerApp({ storage: new MemoryLedgerStorage() })
    // Transitions never reach the API; everything else does.
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) =>
      String(input).endsWith("/transition")
        ? Response.json({ ok: "false" })
        : app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const ledger = new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://x", fetch }),
      onWarning: () => {},
      leaseRenewInterval: 0,
    })
    let paid = 0
    const pay = ledger.tool(
      {
        name: "pay",
        binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      },
      async (_args: object, tx) => tx.sideEffect(async () => ++paid),
    )
    await expect(pay({ amount: 1 }, { requestId: "p1" })).rejects.toBeInstanceOf(
      LedgerStorageUnavailableError,
    )
    expect(paid).toBe(0)
  })
})
