// A ledger process whose clock runs ahead of the server's reads a live call's lease as lapsed. Its redispatch marked
// the row BLOCKED (or settled it by a reconciler's verdict and re-ran it) over the store's transition route, while
// the holder's lease was live by the server's clock: the call then ran twice once an operator released it. The
// server refuses a write that ends another holder's live claim, or acts on a heartbeat it does not read as silent yet
// (`lease_held`), and the redispatch polls it.
import { describe, expect, it } from "vitest"
import { entryToRow } from "../../src/adapter-kit.ts"
import { HttpLedgerStorage } from "../../src/adapters/http.ts"
import type { Reconciler } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/index.ts"
import {
  ActionLedger,
  type Clock,
  type LedgerEntry,
  LedgerHardBlockError,
  LedgerPollTimeoutError,
  LedgerReleaseRefusedError,
  LedgerWorkerAliveError,
  MemoryLedgerStorage,
} from "../../src/index.ts"
import { ManualClock } from "../../src/testing.ts"

const T = 1_800_000_000
const HOUR = 3600
const pay = {
  name: "pay",
  binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
} as const

function world() {
  const server = new ManualClock(T)
  const memory = new MemoryLedgerStorage()
  const app = createLedgerApp({ storage: memory, clock: server })
  const answers: string[] = []
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await app.fetch(new Request(input, init))
    if (String(input).endsWith("/transition")) answers.push(`${res.status}`)
    return res
  }) as typeof globalThis.fetch
  /** A ledger process on its own HttpLedgerStorage, its clock `offset` seconds off the server's. */
  const ledger = (owner: string, offset: number, reconciler?: Reconciler, sleep?: Clock["sleep"]) => {
    const clock: Clock = {
      now: () => server.now() + offset,
      sleep: sleep ?? ((s, signal) => server.sleep(s, signal)),
    }
    return new ActionLedger({
      storage: new HttpLedgerStorage({ url: "http://ledger.test", fetch }),
      clock,
      owner,
      leaseTtl: 60,
      leaseRenewInterval: 0,
      pollTimeout: sleep ? 600 : 0,
      reclaimRequiresDeathSignal: true,
      ...(reconciler ? { reconciler } : {}),
      onWarning: () => {},
    })
  }
  const row = async (id: string): Promise<LedgerEntry> => {
    const r = await memory.get(id)
    if (!r) throw new Error(`no row '${id}'`)
    return r
  }
  return { server, app, ledger, row, answers }
}

/** A holder's call that stops inside its body until `go()`, then runs its effect once. */
function heldCall(holder: ActionLedger, effects: string[]) {
  let go!: () => void
  const gate = new Promise<void>((r) => {
    go = r
  })
  let inside!: () => void
  const entered = new Promise<void>((r) => {
    inside = r
  })
  const call = holder.tool(pay, async (_args, tx) => {
    await tx.recordExternalOperation("op-1")
    inside()
    await gate
    await tx.sideEffect(() => {
      effects.push("holder")
    })
    return "holder"
  })({}, { requestId: "pay-1" })
  return { call, entered, go }
}

describe("HttpLedgerStorage: a process ahead never ends a claim the server's clock holds live", () => {
  it("a redispatch 2 h ahead polls a live call instead of marking it BLOCKED; the holder's effect runs once", async () => {
    const { server, ledger, row, answers } = world()
    const effects: string[] = []
    const held = heldCall(ledger("holder", 0), effects)
    await held.entered
    server.advance(10)
    const peer = ledger("ahead", 2 * HOUR).tool(pay, async () => {
      effects.push("peer")
      return "peer"
    })
    await expect(peer({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    expect(answers.filter((a) => a === "409")).toHaveLength(1)
    const r = await row("pay-1")
    expect([r.terminalOutcome, r.fence, r.owner]).toEqual(["IN_FLIGHT", 1, "holder"])
    held.go()
    await expect(held.call).resolves.toBe("holder")
    expect(effects).toEqual(["holder"])
    expect((await row("pay-1")).terminalOutcome).toBe("COMPLETED")
  })

  it("a reconciler's not_executed verdict, read 2 h ahead, does not re-run the live call", async () => {
    const { server, ledger, row } = world()
    const effects: string[] = []
    const held = heldCall(ledger("holder", 0), effects)
    await held.entered
    server.advance(10)
    const verdicts: string[] = []
    const reconciler: Reconciler = {
      reconcile: async () => {
        verdicts.push("not_executed")
        return { status: "NOT_EXECUTED" }
      },
    }
    const peer = ledger("ahead", 2 * HOUR, reconciler).tool(pay, async () => {
      effects.push("peer")
      return "peer"
    })
    await expect(peer({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    expect(verdicts.length).toBeGreaterThan(0)
    expect([(await row("pay-1")).terminalOutcome, (await row("pay-1")).fence]).toEqual(["IN_FLIGHT", 1])
    held.go()
    await expect(held.call).resolves.toBe("holder")
    expect(effects).toEqual(["holder"])
  })

  it("a verdict acted on heartbeat silence read 3 h ahead waits for the silence by the server's clock", async () => {
    const { server, ledger, row } = world()
    const effects: string[] = []
    const held = heldCall(ledger("holder", 0), effects)
    await held.entered
    // Lapsed by the server's clock too, but heard from 61 s ago: no death by the default 7,200 s of silence.
    server.advance(61)
    const reconciler: Reconciler = { reconcile: async () => ({ status: "NOT_EXECUTED" }) }
    const peer = ledger("ahead", 3 * HOUR, reconciler).tool(pay, async () => {
      effects.push("peer")
      return "peer"
    })
    await expect(peer({}, { requestId: "pay-1" })).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    // The lapsed lease is marked; the re-run is not made.
    expect([(await row("pay-1")).terminalOutcome, (await row("pay-1")).fence]).toEqual(["BLOCKED", 1])
    server.advance(7200)
    await expect(peer({}, { requestId: "pay-1" })).resolves.toBe("peer")
    held.go()
    await expect(held.call).rejects.toThrow()
    expect(effects).toEqual(["peer"])
  })

  it("an operator 2 h ahead cannot release the live call; once the server's lease lapses the redispatch may", async () => {
    const { server, ledger, row } = world()
    const effects: string[] = []
    const held = heldCall(ledger("holder", 0), effects)
    await held.entered
    const ops = ledger("ops", 2 * HOUR)
    const release = () =>
      ops.release("pay-1", {
        verified: "not_executed",
        by: "ops",
        reason: "no charge at the provider",
        overrideDeathSignal: "worker drained",
      })
    await expect(release()).rejects.toBeInstanceOf(LedgerReleaseRefusedError)
    expect([(await row("pay-1")).terminalOutcome, (await row("pay-1")).fence]).toEqual(["IN_FLIGHT", 1])
    // Lapsed by the server's clock too: the same release lands.
    server.advance(61)
    const released = await release()
    expect([released.terminalOutcome, released.fence]).toEqual(["BLOCKED", 2])
    held.go()
    await expect(held.call).rejects.toThrow()
    expect(effects).toEqual([])
  })

  it("a reclaim refused as held judges the row again after its poll: a boundary moved meanwhile blocks it", async () => {
    const { server, ledger } = world()
    const sync = { ...pay, binding: { ...pay.binding, sideEffectClass: "idempotent_mutate" } } as const
    const effects: string[] = []
    let crossed!: () => void
    const inEffect = new Promise<void>((r) => {
      crossed = r
    })
    let go!: () => void
    const gate = new Promise<void>((r) => {
      go = r
    })
    let inside!: () => void
    const entered = new Promise<void>((r) => {
      inside = r
    })
    let finish!: () => void
    const done = new Promise<void>((r) => {
      finish = r
    })
    const first = ledger("holder", 0).tool(sync, async (_args, tx) => {
      inside()
      await gate
      return tx.sideEffect(async () => {
        effects.push("holder")
        crossed()
        await done
        return "holder"
      })
    })({}, { requestId: "sync-1" })
    await entered
    // The peer's first reclaim is refused (live by the server's clock); while it polls, the holder enters its
    // effect, and then the server's lease lapses.
    const sleep = async () => {
      go()
      await inEffect
      server.advance(61)
    }
    const peer = ledger("ahead", 2 * HOUR, undefined, sleep).tool(sync, async () => {
      effects.push("peer")
      return "peer"
    })
    await expect(peer({}, { requestId: "sync-1" })).rejects.toThrow(/maybe_crossed/)
    finish()
    await first.catch(() => null)
    expect(effects).toEqual(["holder"])
  })

  it("a reclaim on heartbeat silence read 2 h ahead waits for that silence by the server's clock", async () => {
    const { server, ledger, row } = world()
    const sync = { ...pay, binding: { ...pay.binding, sideEffectClass: "idempotent_mutate" } } as const
    const effects: string[] = []
    let go!: () => void
    const gate = new Promise<void>((r) => {
      go = r
    })
    let inside!: () => void
    const entered = new Promise<void>((r) => {
      inside = r
    })
    const first = ledger("holder", 0).tool(sync, async () => {
      inside()
      await gate
      effects.push("holder")
      return "holder"
    })({}, { requestId: "sync-2" })
    await entered
    // The lease lapsed by the server's clock too, but the holder was heard from 61 s ago: under the 120 s of silence
    // (2 x the 60 s lease) reclaimRequiresDeathSignal takes as its death. A peer on the server's clock waits.
    server.advance(61)
    const body = async () => {
      effects.push("peer")
      return "peer"
    }
    await expect(ledger("same", 0).tool(sync, body)({}, { requestId: "sync-2" })).rejects.toBeInstanceOf(
      LedgerPollTimeoutError,
    )
    await expect(
      ledger("ahead", 2 * HOUR).tool(sync, body)({}, { requestId: "sync-2" }),
    ).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    expect([(await row("sync-2")).fence, (await row("sync-2")).owner]).toEqual([1, "holder"])
    go()
    await expect(first).resolves.toBe("holder")
    expect(effects).toEqual(["holder"])
  })

  it("a reclaim on heartbeat silence read 2 h ahead waits for it on a row that stores EXPIRED (a legacy row)", async () => {
    const { server, app, ledger, row } = world()
    const sync = { ...pay, binding: { ...pay.binding, sideEffectClass: "idempotent_mutate" } } as const
    // Its lease lapsed by the server's clock 1 s ago; its holder was heard from 61 s ago, under the 120 s of silence.
    const held = await ledger("holder", 0).claim({ tool: "pay", requestId: "sync-3" })
    server.advance(61)
    const expired = { ...held.entry, terminalOutcome: "EXPIRED", status: "in-flight" } as const
    const put = await app.request("/v1/rows/sync-3", {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ row: entryToRow(expired) }),
    })
    expect(put.status).toBe(200)
    const body = async () => "peer"
    await expect(ledger("same", 0).tool(sync, body)({}, { requestId: "sync-3" })).rejects.toBeInstanceOf(
      LedgerPollTimeoutError,
    )
    await expect(
      ledger("ahead", 2 * HOUR).tool(sync, body)({}, { requestId: "sync-3" }),
    ).rejects.toBeInstanceOf(LedgerPollTimeoutError)
    expect([(await row("sync-3")).fence, (await row("sync-3")).owner]).toEqual([1, "holder"])
    // Silent by the server's clock too: the reclaim lands.
    server.advance(60)
    await expect(ledger("ahead", 2 * HOUR).tool(sync, body)({}, { requestId: "sync-3" })).resolves.toBe(
      "peer",
    )
  })

  it("an operator 2 h ahead cannot mark a worker dead the server heard from: no verdict later re-runs it", async () => {
    const { server, ledger, row } = world()
    const effects: string[] = []
    let inEffect!: () => void
    const effecting = new Promise<void>((r) => {
      inEffect = r
    })
    let go!: () => void
    const gate = new Promise<void>((r) => {
      go = r
    })
    const first = ledger("holder", 0).tool(pay, async (_args, tx) => {
      await tx.recordExternalOperation("op-1")
      return tx.sideEffect(async () => {
        inEffect()
        await gate
        effects.push("holder")
        return "holder"
      })
    })({}, { requestId: "pay-3" })
    await effecting
    server.advance(10)
    const mark = () => ledger("ops", 2 * HOUR).markWorkerDeadFor("pay-3", { by: "ops", reason: "silent" })
    await expect(mark()).rejects.toBeInstanceOf(LedgerWorkerAliveError)
    expect((await row("pay-3")).workerDeadAssertedAt).toBeNull()
    // The lease lapsed by the server's clock, the holder heard from 61 s ago, inside its effect: a redispatch on the
    // server's clock with the provider's not_executed waits for its death, as it would without the mark.
    server.advance(51)
    const reconciler: Reconciler = { reconcile: async () => ({ status: "NOT_EXECUTED" }) }
    const peer = ledger("peer", 0, reconciler).tool(pay, async () => {
      effects.push("peer")
      return "peer"
    })
    await expect(peer({}, { requestId: "pay-3" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    go()
    await expect(first).resolves.toBe("holder")
    expect(effects).toEqual(["holder"])
  })

  it("the route: a holder's own writes pass, another writer's end of a live bounded lease is refused with lease_held", async () => {
    const { server, app, ledger, row } = world()
    const claim = await ledger("holder", 0).claim({ tool: "pay", requestId: "pay-2" })
    const claimed = await row("pay-2")
    const post = (next: LedgerEntry, outcomes: string[], fence = 1) =>
      app.request("/v1/rows/pay-2/transition", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          next: entryToRow(next),
          expect: { outcomes, fence, owner: "holder", side_effect_boundary: "not_crossed" },
        }),
      })
    const blocked = { ...claimed, terminalOutcome: "BLOCKED", status: "failed", leaseUntil: null } as const
    const refused = await post(blocked, ["IN_FLIGHT", "EXPIRED"])
    expect(refused.status).toBe(409)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("lease_held")
    const rerun = { ...claimed, fence: 2, owner: "peer" }
    expect((await post(rerun, ["IN_FLIGHT"])).status).toBe(409)
    expect((await row("pay-2")).terminalOutcome).toBe("IN_FLIGHT")
    // The holder's own mark (it expects IN_FLIGHT alone, at its fence) is its to make.
    expect(claim.owned).toBe(true)
    const own = await post(blocked, ["IN_FLIGHT"])
    expect(await own.json()).toEqual({ ok: true })
    expect((await row("pay-2")).terminalOutcome).toBe("BLOCKED")
    server.advance(1)
  })

  it("the route: a write acting on silence the server did not see is refused, its text giving times, not an age", async () => {
    const { app, ledger, row } = world()
    await ledger("holder", 0).claim({ tool: "pay", requestId: "pay-4" })
    const claimed = await row("pay-4")
    const refused = await app.request("/v1/rows/pay-4/transition", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        next: entryToRow({ ...claimed, workerDeadAssertedAt: claimed.startedAt }),
        expect: { outcomes: ["IN_FLIGHT"], fence: 1, owner: "holder", silent_for: 120 },
      }),
    })
    expect(refused.status).toBe(409)
    const { error } = (await refused.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe("lease_held")
    // A heartbeat a client ahead stamped is later than the server's now: an age read "-N s ago".
    expect(error.message).toMatch(
      /was heard from at [\d.]+ by the server's clock \(now [\d.]+\), within the 120 s/,
    )
  })
})
