// RemoteLedger's own reckoning of its lease (test/edge/remote-lease-until.test.ts) against a client clock that jumps.
// The server (in-process, on a clock of its own: another machine's) ends the lease by its time; the client read
// Date.now(), so a wall clock stepped back (an NTP step, a VM resume, a user setting the time) kept a lease the server
// had ended, and an answer that came back late started the effect beside the redispatch the server let in.
import { afterEach, describe, expect, it, vi } from "vitest"
import {
  LedgerLeaseError,
  LedgerPollTimeoutError,
  type LedgerStorage,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"

const binding = { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
// Read before any test moves Date.now: the server's clock, which the client's jumps do not touch.
const serverNow = Date.now
const HOUR = 3_600_000

/** Moves this process's wall clock (Date.now) by `ms` from now on; the server's stays put. */
function stepWall(ms: number): void {
  const by = ms + Date.now() - serverNow()
  vi.spyOn(Date, "now").mockImplementation(() => serverNow() + by)
}

afterEach(() => {
  vi.restoreAllMocks()
})

function world(leaseTtl: number) {
  const storage: LedgerStorage = new MemoryLedgerStorage()
  const app = createLedgerApp({
    storage,
    presumedDeadAfter: 2 * leaseTtl,
    clock: { now: () => serverNow() / 1000 },
  })
  const effects: string[] = []
  const answered: string[] = []
  /** Runs after the server answered `late`'s boundary write, before the client sees the answer (a slow network). */
  let inTransit: (() => Promise<void>) | null = null
  const ledger = (name: string, options: { pollTimeout?: number } = {}) => {
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await app.fetch(new Request(input, init))
      const route = String(input).split("/").pop() as string
      const hook = inTransit
      if (name === "late" && hook && route === "boundary") {
        inTransit = null
        await hook()
      }
      answered.push(`${name} ${route}`)
      return res
    }) as typeof globalThis.fetch
    return new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {}, ...options })
  }
  const charge = (name: string) =>
    ledger(name).tool({ name: "charge", binding, leaseTtl }, async (_a: { n: number }, tx) =>
      tx.sideEffect(() => {
        effects.push(name)
        return `ch-${name}`
      }),
    )
  const release = async (id: string) => {
    const r = await app.request(`/v1/transitions/${encodeURIComponent(id)}/release`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ verified: "not_executed", reason: "the provider has no charge", by: "ops" }),
    })
    expect(r.status).toBe(200)
  }
  return {
    storage,
    effects,
    answered,
    ledger,
    charge,
    release,
    onTransit: (f: () => Promise<void>) => {
      inTransit = f
    },
  }
}

describe("RemoteLedger's lease when the client's clock jumps", () => {
  it("a wall clock stepped back past the lease does not keep a lease the server ended", async () => {
    // A 0.3 s lease; the boundary answer takes 0.7 s to come back, and meanwhile the wall clock steps back a minute.
    const w = world(0.3)
    const other = w.charge("other")
    w.onTransit(async () => {
      stepWall(-60_000)
      await sleep(700)
      await w.release("charge:back")
      expect(await other({ n: 1 }, { requestId: "charge:back" })).toBe("ch-other")
    })
    const late = await w
      .charge("late")({ n: 1 }, { requestId: "charge:back" })
      .catch((e: unknown) => e)
    expect(w.effects).toEqual(["other"])
    expect(late).toBeInstanceOf(LedgerLeaseError)
    expect((late as LedgerLeaseError).code).toBe("ledger_lease_expired")
    expect((await w.storage.get("charge:back"))?.terminalOutcome).toBe("COMPLETED")
  }, 10_000)

  it("a monotonic clock that stood still (a suspend it did not count) does not keep it either", async () => {
    // CLOCK_MONOTONIC, which performance.now() reads in Node and most browsers, stops while the machine sleeps; the
    // wall clock, set from the hardware clock on resume, does not. The lease lapses by whichever lapses first.
    const w = world(0.3)
    const other = w.charge("other")
    w.onTransit(async () => {
      const frozen = performance.now()
      vi.spyOn(performance, "now").mockImplementation(() => frozen)
      await sleep(700)
      await w.release("charge:sleep")
      expect(await other({ n: 1 }, { requestId: "charge:sleep" })).toBe("ch-other")
    })
    const late = await w
      .charge("late")({ n: 1 }, { requestId: "charge:sleep" })
      .catch((e: unknown) => e)
    expect(w.effects).toEqual(["other"])
    expect(late).toBeInstanceOf(LedgerLeaseError)
  }, 10_000)

  it("a wall clock stepped forward refuses the effect only until the next renewal", async () => {
    // Refusing is safe (the row is left maybe_crossed) and a forward step cannot be told from a suspend the
    // monotonic clock missed; but renewals go on by the monotonic clock, and the next one sets both clocks' reckoning.
    const w = world(1.5)
    const renewals = () => w.answered.filter((a) => a === "late renew").length
    let refused: unknown = null
    const charge = w
      .ledger("late")
      .tool({ name: "charge", binding, leaseTtl: 1.5 }, async (_a: { n: number }, tx) => {
        stepWall(HOUR)
        const before = renewals()
        refused = await tx.sideEffect(() => w.effects.push("refused")).catch((e: unknown) => e)
        for (let i = 0; i < 120 && renewals() === before; i++) await sleep(25)
        // The renewal's answer has reached the fetch hook; let the client read it.
        await sleep(50)
        return tx.sideEffect(() => {
          w.effects.push("late")
          return "ch-late"
        })
      })
    expect(await charge({ n: 1 }, { requestId: "charge:fwd" })).toBe("ch-late")
    expect(refused).toBeInstanceOf(LedgerLeaseError)
    expect(w.effects).toEqual(["late"])
    expect(renewals()).toBeGreaterThanOrEqual(1)
    const row = await w.storage.get("charge:fwd")
    expect(row?.terminalOutcome).toBe("COMPLETED")
    expect(row?.fence).toBe(1)
  }, 10_000)

  it("a wall clock stepped back does not stretch pollTimeout", async () => {
    const w = world(60)
    let letGo = () => {}
    const held = new Promise<void>((r) => {
      letGo = r
    })
    let started = () => {}
    const running = new Promise<void>((r) => {
      started = r
    })
    const holder = w
      .ledger("holder")
      .tool({ name: "charge", binding, leaseTtl: 60 }, async (_a: { n: number }) => {
        started()
        await held
        return "ch-holder"
      })({ n: 1 }, { requestId: "charge:poll" })
    await running
    const stop = new AbortController()
    const waiter = w
      .ledger("waiter", { pollTimeout: 0.5 })
      .tool({ name: "charge", binding, pollInterval: 0.05 }, async () => "ch-waiter")
    const t0 = performance.now()
    const polled = waiter({ n: 1 }, { requestId: "charge:poll", signal: stop.signal }).catch(
      (e: unknown) => e,
    )
    await sleep(100)
    stepWall(-HOUR)
    const out = await Promise.race([polled, sleep(3000).then(() => "still polling")])
    stop.abort()
    letGo()
    expect(out).toBeInstanceOf(LedgerPollTimeoutError)
    expect(performance.now() - t0).toBeLessThan(3000)
    expect(await holder).toBe("ch-holder")
  }, 10_000)
})
