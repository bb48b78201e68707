// RemoteLedger's sideEffect() against a late owner, as ActionLedger's (test/core/ledger/slow-boundary-answer.test.ts):
// the owner falls silent past presumedDeadAfter, an operator releases `not_executed` from the provider's records (no
// charge there), another agent runs the call and charges; the late owner must not charge too. It did twice: a second
// sideEffect() (a retry after an attempt that failed before its effect) sent no boundary write at all, and a
// boundary answer that reached the client after its lease lapsed started the effect (the server checked the lease
// when it wrote, before the answer's trip back).
import { describe, expect, it } from "vitest"
import {
  LedgerLeaseError,
  LedgerOutcomeAlreadySetError,
  type LedgerStorage,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { ManualClock } from "../../src/testing.ts"

const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const ID = "charge:7"

function world(options: { clock?: ManualClock; leaseTtl: number }) {
  const storage: LedgerStorage = new MemoryLedgerStorage()
  const app = createLedgerApp({
    storage,
    presumedDeadAfter: 2 * options.leaseTtl,
    ...(options.clock ? { clock: options.clock } : {}),
  })
  const effects: string[] = []
  /** Runs after the server answered a boundary write, before the client sees the answer (a slow network). */
  let inTransit: (() => Promise<void>) | null = null
  const agent = (name: string, retry = false) => {
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await app.fetch(new Request(input, init))
      const hook = inTransit
      if (name === "late" && hook && String(input).endsWith("/boundary")) {
        inTransit = null
        await hook()
      }
      return res
    }) as typeof globalThis.fetch
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {} })
    return remote.tool(
      { name: "charge", binding, leaseTtl: options.leaseTtl },
      async (_a: { n: number }, tx) => {
        if (retry)
          await tx
            .sideEffect(() => {
              throw new Error("connection refused")
            })
            .catch(() => {})
        return tx.sideEffect(() => {
          effects.push(name)
          return `ch-${name}`
        })
      },
    )
  }
  const release = async () => {
    const r = await app.request(`/v1/transitions/${encodeURIComponent(ID)}/release`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ verified: "not_executed", reason: "the provider has no charge", by: "ops" }),
    })
    expect(r.status).toBe(200)
  }
  return {
    effects,
    agent,
    release,
    onTransit: (f: () => Promise<void>) => {
      inTransit = f
    },
  }
}

describe("RemoteLedger's sideEffect() for a late owner", () => {
  it("a second sideEffect() is a fenced write: after a release, the late owner's retry never charges", async () => {
    const clock = new ManualClock()
    const w = world({ clock, leaseTtl: 10 })
    const other = w.agent("other")
    // The first attempt's answer is on its way when the owner falls silent: 70 s by the server's clock.
    w.onTransit(async () => {
      clock.advance(70)
      await w.release()
      expect(await other({ n: 1 }, { requestId: ID })).toBe("ch-other")
    })
    const late = await w
      .agent("late", true)({ n: 1 }, { requestId: ID })
      .catch((e: unknown) => e)
    expect(w.effects).toEqual(["other"])
    expect(late).toBeInstanceOf(LedgerOutcomeAlreadySetError)
  })

  it("a boundary answer that arrives after the lease lapsed does not start the effect", async () => {
    // Real time: the client can only tell by its own clock. A 0.3 s lease; the answer takes 0.7 s to come back.
    const w = world({ leaseTtl: 0.3 })
    const other = w.agent("other")
    w.onTransit(async () => {
      await new Promise((r) => setTimeout(r, 700))
      await w.release()
      expect(await other({ n: 1 }, { requestId: ID })).toBe("ch-other")
    })
    const late = await w
      .agent("late")({ n: 1 }, { requestId: ID })
      .catch((e: unknown) => e)
    expect(w.effects).toEqual(["other"])
    expect(late).toBeInstanceOf(LedgerLeaseError)
    expect((late as LedgerLeaseError).code).toBe("ledger_lease_expired")
  }, 10_000)
})
