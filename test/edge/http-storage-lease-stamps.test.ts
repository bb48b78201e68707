// Rows a ledger process writes whole through the store's transition route (a renewal, a re-run's claim after a
// verdict) are leased by the server's clock, for the length the process asked: a process hours behind used to end
// its own lease when it renewed (its next boundary write refused), one ahead to stamp a lease the server read as
// live for hours longer than asked. The holder's later writes carry its own stamps and must not put them back.
import { describe, expect, it } from "vitest"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  ActionLedger,
  type Clock,
  type LedgerEntry,
  LedgerLeaseError,
  MemoryLedgerStorage,
} from "../../src/index.ts"
import { ManualClock } from "../../src/testing.ts"

const T = 1_800_000_000
const HOUR = 3600

const binding = (sideEffectClass: "idempotent_mutate" | "non_idempotent_mutate") =>
  ({ agentId: "a", policyVersion: "1", sideEffectClass }) as const

/** `answered` runs once the server wrote, before its answer reaches the process: time may pass there. */
function world(answered?: (server: ManualClock, body: string) => void) {
  const server = new ManualClock(T)
  const memory = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage: memory, clock: server })
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await app.fetch(new Request(input, init))
    answered?.(server, typeof init?.body === "string" ? init.body : "")
    return res
  }) as typeof globalThis.fetch
  /** A ledger process on its own HttpLedgerStorage, its clock `offset` seconds off the server's. */
  const warnings: string[] = []
  const ledger = (owner: string, offset: number, leaseTtl: number) => {
    const clock: Clock = { now: () => server.now() + offset, sleep: (s, signal) => server.sleep(s, signal) }
    return new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://ledger.test", fetch }),
      clock,
      owner,
      leaseTtl,
      leaseRenewInterval: 0,
      pollTimeout: 0,
      onWarning: (w: string) => warnings.push(w),
    })
  }
  const row = async (id: string): Promise<LedgerEntry> => {
    const r = await memory.get(id)
    if (!r) throw new Error(`no row '${id}'`)
    return r
  }
  return { server, ledger, row, warnings }
}

describe("HttpLedgerStorage: the server's clock stamps the leases a process writes whole", () => {
  it("a renewal by a process 3 h behind holds the server's now + ttl, and its boundary write after it is accepted", async () => {
    const { server, ledger, row } = world()
    const holder = ledger("behind", -3 * HOUR, 60)
    const seen: LedgerEntry[] = []
    let effects = 0
    const pay = holder.tool({ name: "pay", binding: binding("non_idempotent_mutate") }, async (_args, tx) => {
      server.advance(20)
      await tx.renewLease(60)
      seen.push(await row("pay-1"))
      server.advance(20)
      await tx.sideEffect(async () => {
        effects++
        seen.push(await row("pay-1"))
      })
      return "paid"
    })
    await expect(pay({}, { requestId: "pay-1" })).resolves.toBe("paid")
    expect(effects).toBe(1)
    const [renewed, crossing] = seen
    expect([renewed?.leaseUntil, renewed?.lastHeartbeatAt]).toEqual([T + 80, T + 20])
    // The boundary write carried the holder's own stamps (3 h back); the server's stayed.
    expect(crossing?.sideEffectBoundary).toBe("maybe_crossed")
    expect([crossing?.leaseUntil, crossing?.lastHeartbeatAt]).toEqual([T + 80, T + 20])
    const done = await row("pay-1")
    expect([done.terminalOutcome, done.result, done.lastHeartbeatAt]).toEqual(["COMPLETED", "paid", T + 20])
  })

  it("a renewal by a process 1 h ahead leaves the server's lease: another worker reclaims once it passes", async () => {
    const { server, ledger, row, warnings } = world()
    const holder = ledger("ahead", HOUR, 2 * HOUR)
    const peer = ledger("peer", 0, 2 * HOUR)
    const tool = binding("idempotent_mutate")
    let finish!: () => void
    const held = new Promise<void>((r) => {
      finish = r
    })
    let renewed = false
    const runs: string[] = []
    const first = holder.tool({ name: "sync", binding: tool }, async (_args, tx) => {
      runs.push("holder")
      server.advance(600)
      await tx.renewLease()
      renewed = true
      await held
      return "holder"
    })({}, { requestId: "sync-1" })
    while (!renewed) await new Promise((r) => setTimeout(r, 1))
    // Asked at the server's T + 600 for 2 h: the process's own clock would have said T + 4200 + 2 h.
    expect((await row("sync-1")).leaseUntil).toBe(T + 600 + 2 * HOUR)
    server.advance(2 * HOUR)
    const second = peer.tool({ name: "sync", binding: tool }, async () => {
      runs.push("peer")
      return "peer"
    })({}, { requestId: "sync-1" })
    await expect(second).resolves.toBe("peer")
    finish()
    // Its claim taken over, the holder's completion is refused (its caller gets its body's result, with a warning):
    // the peer's result stays.
    await expect(first).resolves.toBe("holder")
    expect(warnings.filter((w) => w.startsWith("tool result discarded"))).toHaveLength(1)
    expect(runs).toEqual(["holder", "peer"])
    const done = await row("sync-1")
    expect([done.terminalOutcome, done.result, done.fence]).toEqual(["COMPLETED", "peer", 2])
  })

  it("a re-run after a not_executed verdict, by a process 3 h behind, is leased from the server's now", async () => {
    const { server, ledger, row } = world()
    const first = ledger("first", 0, 60)
    const tool = binding("non_idempotent_mutate")
    let effects = 0
    const timedOut = first.tool({ name: "pay", binding: tool }, async (_args, tx) =>
      tx.sideEffect(async () => {
        throw new Error("provider timed out")
      }),
    )
    await expect(timedOut({}, { requestId: "pay-2" })).rejects.toThrow("provider timed out")
    expect((await row("pay-2")).terminalOutcome).toBe("UNKNOWN")
    await first.release("pay-2", { verified: "not_executed", by: "ops", reason: "no charge at the provider" })
    server.advance(30)
    const behind = ledger("behind", -3 * HOUR, 60)
    let claimed: LedgerEntry | null = null
    const rerun = behind.tool({ name: "pay", binding: tool }, async (_args, tx) => {
      claimed = await row("pay-2")
      await tx.sideEffect(() => {
        effects++
      })
      return "paid"
    })
    await expect(rerun({}, { requestId: "pay-2" })).resolves.toBe("paid")
    expect(effects).toBe(1)
    const c = claimed as LedgerEntry | null
    expect([c?.fence, c?.owner, c?.leaseUntil, c?.lastHeartbeatAt]).toEqual([3, "behind", T + 90, T + 30])
    const done = await row("pay-2")
    expect([done.terminalOutcome, done.result, done.resolvedBy]).toEqual(["COMPLETED", "paid", "ops"])
  })

  it("a write that carries a lease stamped before (a reference, an operator's mark) keeps it as sent", async () => {
    const { server, ledger, row } = world()
    const holder = ledger("w1", 0, 60)
    const claim = await holder.claim({ tool: "pay", requestId: "pay-3" })
    expect(claim.owned).toBe(true)
    server.advance(10)
    const guard = { fence: claim.entry.fence, owner: "w1" }
    await holder.attachExternalOperationRef("pay-3", "op-1", guard)
    await holder.markWorkerDeadFor("pay-3", { by: "ops", reason: "drained", overrideHeartbeat: true })
    const r = await row("pay-3")
    expect([r.externalOperationRef, r.workerDeadAssertedBy]).toEqual(["op-1", "ops"])
    expect([r.leaseUntil, r.lastHeartbeatAt, r.fence]).toEqual([T + 60, T, 1])
  })

  it("a process 3 h ahead renews the lease a claim gave it (its row holds that lease by its own clock)", async () => {
    const { server, ledger, row } = world()
    const holder = ledger("ahead", 3 * HOUR, 60)
    const sync = holder.tool({ name: "sync", binding: binding("idempotent_mutate") }, async (_args, tx) => {
      expect([tx.entry.leaseUntil, tx.entry.lastHeartbeatAt]).toEqual([T + 3 * HOUR + 60, T + 3 * HOUR])
      server.advance(10)
      await tx.renewLease()
      return "synced"
    })
    await expect(sync({}, { requestId: "sync-2" })).resolves.toBe("synced")
    const done = await row("sync-2")
    expect([done.terminalOutcome, done.lastHeartbeatAt, done.startedAt]).toEqual([
      "COMPLETED",
      T + 10,
      T + 3 * HOUR,
    ])
  })

  it("a lease that lapses by the server's clock while a process 3 h behind writes its boundary starts no effect", async () => {
    const { ledger, row } = world((server, body) => {
      if (body.includes('"side_effect_boundary":"maybe_crossed"') && body.includes('"next"'))
        server.advance(61)
    })
    const holder = ledger("behind", -3 * HOUR, 60)
    let effects = 0
    const pay = holder.tool({ name: "pay", binding: binding("non_idempotent_mutate") }, async (_args, tx) =>
      tx.sideEffect(() => {
        effects++
      }),
    )
    await expect(pay({}, { requestId: "pay-4" })).rejects.toBeInstanceOf(LedgerLeaseError)
    expect(effects).toBe(0)
    const r = await row("pay-4")
    expect([r.terminalOutcome, r.sideEffectBoundary]).toEqual(["UNKNOWN", "maybe_crossed"])
  })

  it("a process 1 h ahead moves the boundary through the guard API (its client hands back its own-clock row): the effect may start", async () => {
    const { server, ledger, row } = world()
    const holder = ledger("ahead", HOUR, 60)
    const claim = await holder.claim({ tool: "pay", requestId: "pay-5" })
    expect(claim.owned).toBe(true)
    server.advance(10)
    const guard = { fence: claim.entry.fence, owner: "ahead" }
    // The row read back is leased by this process's clock (its client claimed it): live by it, as by the server's.
    const moved = await holder.advanceBoundary("pay-5", "maybe_crossed", guard)
    expect(moved.sideEffectBoundary).toBe("maybe_crossed")
    const r = await row("pay-5")
    expect([r.sideEffectBoundary, r.leaseUntil, r.terminalOutcome]).toEqual([
      "maybe_crossed",
      T + 60,
      "IN_FLIGHT",
    ])
  })

  // Renewed through the guard API, the row read back was the server's, leased to T + 60: long past by this process's
  // clock, so every renewal was refused as "lease already expired" while the server's lease was live.
  it("a process 1 h ahead renews through the guard API: its own lease by its clock, the server's by the server's", async () => {
    const { server, ledger, row } = world()
    const holder = ledger("ahead", HOUR, 60)
    const claim = await holder.claim({ tool: "pay", requestId: "pay-7" })
    server.advance(10)
    const renewed = await holder.renewLease("pay-7", {
      fence: claim.entry.fence,
      owner: "ahead",
      leaseTtl: 60,
    })
    expect([renewed.leaseUntil, renewed.lastHeartbeatAt]).toEqual([T + HOUR + 70, T + HOUR + 10])
    const r = await row("pay-7")
    expect([r.leaseUntil, r.lastHeartbeatAt, r.terminalOutcome]).toEqual([T + 70, T + 10, "IN_FLIGHT"])
  })

  it("a holder 3 h behind keeps the server's lease on its boundary write after 10,000 other rows were claimed", async () => {
    const { server } = world()
    const app = createLedgerApp({ storage: new MemoryLedgerStorage(), clock: server })
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const storage = new HttpLedgerStorage({ url: "http://ledger.test", fetch })
    // The server's row as another client reads it: the holder's own client hands it the row leased by its clock.
    const reader = new HttpLedgerStorage({ url: "http://ledger.test", fetch })
    const clock: Clock = { now: () => server.now() - 3 * HOUR, sleep: (s, signal) => server.sleep(s, signal) }
    const opts = { storage, clock, leaseTtl: 600, leaseRenewInterval: 0, pollTimeout: 0 }
    const holder = new ActionLedger({ ...opts, owner: "behind" })
    const peer = new ActionLedger({ ...opts, owner: "peer", clock: { ...clock, now: () => server.now() } })
    let effects = 0
    let leased: number | null | undefined
    const tool = { name: "pay", binding: binding("idempotent_mutate") }
    const pay = holder.tool(tool, async (_args, tx) => {
      // A busy process: 10,000 other calls claimed and held beside this one.
      const other = await holder.claim({ tool: "other", requestId: "other-0" })
      for (let i = 1; i <= 10_000; i++) {
        const c = await storage.tryClaimInflight(
          { ...other.entry, requestId: `other-${i}` },
          600,
          clock.now(),
        )
        expect(c.outcome).toBe("claimed")
      }
      // Its boundary write's heartbeat is then not the instant it asks about (a renewal's would be).
      server.advance(1)
      await tx.sideEffect(async () => {
        effects++
        leased = (await reader.get("pay-6"))?.leaseUntil
        server.advance(59)
        // Live by the server's clock for another 540 s: another worker must not take the call over.
        await peer
          .tool(tool, async () => {
            effects++
            return "twice"
          })({}, { requestId: "pay-6" })
          .catch(() => null)
      })
      return "paid"
    })
    const outcome = await pay({}, { requestId: "pay-6" })
    const done = await reader.get("pay-6")
    expect([effects, leased, outcome, done?.terminalOutcome, done?.owner]).toEqual([
      1,
      T + 600,
      "paid",
      "COMPLETED",
      "behind",
    ])
  }, 60_000)
})
