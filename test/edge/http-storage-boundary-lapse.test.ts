// The boundary write's after-check through HttpLedgerStorage, when the holder's own reading of its lease is earlier
// than the server's. A claim is leased from the `now` the process sent, for as long as the server leased it from its
// own now (docs/http-api.md): time spent before the server took the claim makes the holder's lease end before the
// server's. A boundary write sent once that reading had lapsed, and accepted while the server's lease still held, was
// exempt from the check (the exemption is for a row read back through the guard API, which carries the server's
// stamps): the effect started however long the answer took to come back, by then on a lease the server had lapsed.
// With the holder presumed dead by then, a reconciler's not_executed verdict let a redispatch run it too.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  ActionLedger,
  type Clock,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerLeaseError,
  MemoryLedgerStorage,
  ReconcileResult,
} from "../../src/index.ts"
import { ManualClock } from "../../src/testing.ts"

const T = 1_800_000_000
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

/** The edge app on `server`; `sent` runs before the app takes a request, `answered` before its answer comes back. */
function world(hooks: {
  sent?: (body: string) => Promise<void> | void
  answered?: (body: string) => Promise<void> | void
}) {
  const server = new ManualClock(T)
  const memory = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage: memory, clock: server })
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const body = typeof init?.body === "string" ? init.body : ""
    await hooks.sent?.(body)
    const res = await app.fetch(new Request(input, init))
    await hooks.answered?.(body)
    return res
  }) as typeof globalThis.fetch
  const provider = new Set<string>()
  /** A ledger process, its clock `offset` s off the server's; its reconciler (unless `blind`) reads the provider's. */
  const ledger = (owner: string, offset: number, blind = false) => {
    const clock: Clock = { now: () => server.now() + offset, sleep: (s, signal) => server.sleep(s, signal) }
    const reconciler = {
      reconcile: (e: LedgerEntry) =>
        provider.has(e.externalOperationRef ?? "")
          ? ReconcileResult.completed("paid")
          : ReconcileResult.notExecuted(),
    }
    return new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://ledger.test", fetch }),
      clock,
      owner,
      leaseTtl: 60,
      leaseRenewInterval: 0,
      pollTimeout: 0,
      onWarning: () => {},
      ...(blind ? {} : { reconciler }),
    })
  }
  const row = async (id: string): Promise<LedgerEntry> => {
    const r = await memory.get(id)
    if (!r) throw new Error(`no row '${id}'`)
    return r
  }
  return { server, ledger, row, provider }
}

const isClaim = (body: string) => body.includes('"lease_ttl"')
const isBoundary = (body: string) =>
  body.includes('"next"') && body.includes('"side_effect_boundary":"maybe_crossed"')

describe("HttpLedgerStorage: a lease the holder read as lapsed before its boundary write", () => {
  for (const [name, offset] of [
    ["in step with the server", 0],
    ["2.6 h behind it", -9345],
    ["2.6 h ahead of it", 9345],
  ] as const)
    it(`lapses by the server's clock while the write is answered: no effect, none twice (a process ${name})`, async () => {
      let peerRan: Promise<unknown> = Promise.resolve()
      let claimed = false
      let answered = false
      const effects: string[] = []
      const { server, ledger, row, provider } = world({
        // 30 s pass before the server takes the claim: leased T + 30 .. T + 90, by the holder's reading T .. T + 60.
        sent: (body) => {
          if (claimed || !isClaim(body) || !body.includes('"holder"')) return
          claimed = true
          server.advance(30)
        },
        // The server took the boundary write at T + 70 (its lease live); the answer comes back at T + 160. By then
        // the holder's heartbeat (T + 30) has been silent for presumedDeadAfter (2 × 60 s), and the provider has no
        // charge: a redispatch with a reconciler re-runs the call.
        answered: async (body) => {
          if (answered || !isBoundary(body) || !body.includes('"holder"')) return
          answered = true
          server.advance(90)
          peerRan = peer({}, { requestId: "pay-1" }).catch((e: unknown) => e)
          await peerRan
        },
      })
      const run = (owner: string, offset: number) =>
        ledger(owner, offset).tool({ name: "pay", binding }, async (_args, tx) => {
          await tx.recordExternalOperation("pi_1")
          if (owner === "holder") server.advance(40)
          return tx.sideEffect(() => {
            effects.push(owner)
            provider.add("pi_1")
            return `paid by ${owner}`
          })
        })
      const peer = run("peer", 0)
      const holder = run("holder", offset)
      await expect(holder({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerLeaseError)
      await expect(peerRan).resolves.toBe("paid by peer")
      expect(effects).toEqual(["peer"])
      const done = await row("pay-1")
      expect([done.terminalOutcome, done.result, done.fence]).toEqual(["COMPLETED", "paid by peer", 2])
    })
})

// What the refused holder leaves: its row UNKNOWN at maybe_crossed with its provider ref, though no effect started.
// Without a reconciler a redispatch hard-blocks on it; the operator's release (docs/cli.md) lets the next run pay once.
it("the UNKNOWN row a refused holder leaves is settled by an operator's release: the next run pays once", async () => {
  let claimed = false
  const effects: string[] = []
  const { server, ledger, row, provider } = world({
    // As above: leased T + 30 .. T + 90 by the server, T .. T + 60 by the holder's reading.
    sent: (body) => {
      if (claimed || !isClaim(body) || !body.includes('"holder"')) return
      claimed = true
      server.advance(30)
    },
  })
  const run = (owner: string) =>
    ledger(owner, 0, true).tool({ name: "pay", binding }, async (_args, tx) => {
      await tx.recordExternalOperation("pi_1")
      if (owner === "holder") server.advance(40)
      return tx.sideEffect(() => {
        effects.push(owner)
        provider.add("pi_1")
        return `paid by ${owner}`
      })
    })
  await expect(run("holder")({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerLeaseError)
  const left = await row("pay-1")
  expect([left.terminalOutcome, left.sideEffectBoundary, left.externalOperationRef]).toEqual([
    "UNKNOWN",
    "maybe_crossed",
    "pi_1",
  ])
  const redispatch = run("redispatch")
  await expect(redispatch({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
  const ops = ledger("ops", 0, true)
  await ops.release("pay-1", {
    verified: "not_executed",
    by: "ops",
    reason: "no charge pi_1 at the provider",
    expectedFence: left.fence,
  })
  await expect(redispatch({}, { requestId: "pay-1" })).resolves.toBe("paid by redispatch")
  await expect(redispatch({}, { requestId: "pay-1" })).resolves.toBe("paid by redispatch")
  expect(effects).toEqual(["redispatch"])
})

const offsets = [
  ["in step with the server", 0],
  ["2.6 h behind it", -9345],
  ["2.6 h ahead of it", 9345],
] as const

/**
 * A holder on a clock `offset` off the server's claims `pay-1` through ActionLedger's guard methods (the claim
 * reaching the server `claimTakes` s late), moves its boundary `writeAt` s later, and the answer comes back
 * `answerTakes` s after the server took the write, after a redispatch with a reconciler found no charge and re-ran
 * the call. The holder must start no effect: the peer's is the only one.
 */
async function guardBoundaryAnsweredLate(
  offset: number,
  t: { claimTakes: number; writeAt: number; answerTakes: number },
): Promise<void> {
  let peerRan: Promise<unknown> = Promise.resolve()
  let claimed = false
  let answered = false
  const effects: string[] = []
  const { server, ledger, row, provider } = world({
    sent: (body) => {
      if (claimed || !isClaim(body) || !body.includes('"holder"')) return
      claimed = true
      server.advance(t.claimTakes)
    },
    answered: async (body) => {
      if (answered || !isBoundary(body) || !body.includes('"holder"')) return
      answered = true
      server.advance(t.answerTakes)
      peerRan = peer({}, { requestId: "pay-1" }).catch((e: unknown) => e)
      await peerRan
    },
  })
  const peer = ledger("peer", 0).tool({ name: "pay", binding }, async (_args, tx) => {
    await tx.recordExternalOperation("pi_1")
    return tx.sideEffect(() => {
      effects.push("peer")
      provider.add("pi_1")
      return "paid by peer"
    })
  })
  const holder = ledger("holder", offset)
  const decision = { allowed: true, verdicts: [], deniedReasons: [] }
  const claim = await holder.claim({ tool: "pay", requestId: "pay-1", binding, decision })
  expect(claim.owned).toBe(true)
  const guard = { fence: claim.entry.fence, owner: "holder" }
  await holder.attachExternalOperationRef("pay-1", "pi_1", guard)
  server.advance(t.writeAt)
  const crossed = await holder.advanceBoundary("pay-1", "maybe_crossed", guard).then(
    () => effects.push("holder"),
    (e: unknown) => e,
  )
  expect(crossed).toBeInstanceOf(LedgerLeaseError)
  await expect(peerRan).resolves.toBe("paid by peer")
  expect(effects).toEqual(["peer"])
  const done = await row("pay-1")
  expect([done.terminalOutcome, done.result, done.fence]).toEqual(["COMPLETED", "paid by peer", 2])
}

// The same through ActionLedger's guard methods, which build on the row read back from the store: it carried the
// server's stamps, which a process on another clock read as lapsed already (exempt from the check) or live for hours,
// so a boundary write answered after the server's lease had lapsed, and the call re-run meanwhile, still started the
// effect. The holder's own client now hands it the row leased by its own clock, as the claim did.
describe("HttpLedgerStorage: a guard method's boundary write answered after the server's lease lapsed", () => {
  for (const [name, offset] of offsets)
    it(`starts no effect, none twice (a process ${name})`, () =>
      // The server takes the write at T + 50 (its lease live to T + 60); the answer comes back at T + 150.
      guardBoundaryAnsweredLate(offset, { claimTakes: 0, writeAt: 50, answerTakes: 100 }))
})

// The guard methods read the row back through the client that claimed it, which now hands it leased by the holder's
// clock: ending before the server's by the time the claim took to reach it. A boundary write sent once that reading
// had lapsed, and accepted while the server's lease still held, was exempt from the after-check (the exemption is for
// a row carrying the server's stamps), as the tool body's was before: answered after a re-run, it started the effect.
describe("HttpLedgerStorage: a guard method's boundary write sent on a lease the holder read as lapsed", () => {
  for (const [name, offset] of offsets)
    it(`starts no effect, none twice (a process ${name})`, () =>
      // Leased T + 30 .. T + 90 by the server, T .. T + 60 by the holder's reading; the server takes the boundary
      // write at T + 70 (its lease live), and the answer comes back at T + 160.
      guardBoundaryAnsweredLate(offset, { claimTakes: 30, writeAt: 40, answerTakes: 90 }))
})
