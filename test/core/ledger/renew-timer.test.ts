import { describe, expect, it } from "vitest"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { renewEvery, systemClock } from "../../../src/core/ledger/clock.ts"
import { countedSignal } from "../counted-signal.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("renewEvery", () => {
  it("brings the first renewal forward to firstAfter, then renews every interval until stopped", async () => {
    let calls = 0
    const stop = renewEvery(
      0.05,
      async () => {
        calls++
      },
      () => true,
      0,
    )
    await sleep(25)
    expect(calls).toBe(1) // the interval alone would not have fired yet
    for (let i = 0; i < 100 && calls < 3; i++) await sleep(10)
    expect(calls).toBeGreaterThanOrEqual(3)
    stop()
    const stoppedAt = calls
    await sleep(120)
    expect(calls).toBe(stoppedAt)
  })

  it("stops after a failure the retry rule refuses, also when it is the brought-forward first one", async () => {
    let calls = 0
    renewEvery(
      0.02,
      async () => {
        calls++
        throw new Error("claim gone")
      },
      () => false,
      0,
    )
    await sleep(150)
    expect(calls).toBe(1)
  })

  it("a 90-day lease's interval (past the 24.8 days a timer can wait) does not renew every millisecond", async () => {
    let calls = 0
    const day = 86_400
    const stops = [
      renewEvery(
        30 * day,
        async () => void calls++,
        () => true,
      ),
      renewEvery(
        30 * day,
        async () => void calls++,
        () => true,
        25 * day,
      ),
    ]
    await sleep(60)
    for (const stop of stops) stop()
    expect(calls).toBe(0)
  })

  it("systemClock.sleep() past 24.8 days waits instead of returning at once", async () => {
    const aborter = new AbortController()
    let woke = false
    const slept = systemClock.sleep(30 * 86_400, aborter.signal).then(
      () => {
        woke = true
      },
      () => {},
    )
    await sleep(30)
    expect(woke).toBe(false)
    aborter.abort()
    await slept
  })
})

describe("one abort listener per signal", () => {
  it("twenty sleeps on one signal add one listener, all wake on abort, and the last one done takes it off", async () => {
    const s = countedSignal()
    const sleeps = Array.from({ length: 20 }, () => systemClock.sleep(3600, s.signal))
    expect(s.most()).toBe(1)
    const reason = new Error("stop")
    s.aborter.abort(reason)
    const settled = await Promise.allSettled(sleeps)
    expect(settled.map((r) => (r.status === "rejected" ? r.reason : "woke"))).toEqual(Array(20).fill(reason))

    const t = countedSignal()
    await Promise.all(Array.from({ length: 20 }, (_, i) => systemClock.sleep(0.001 * (i % 3), t.signal)))
    // The last sleep done takes the listener off: Node keeps an AbortSignal.any() signal with a listener alive.
    expect(t.most()).toBe(1)
    expect(t.listening()).toBe(0)
    await Promise.all(Array.from({ length: 20 }, () => systemClock.sleep(0.001, t.signal)))
    expect(t.most()).toBe(1)
    expect(t.listening()).toBe(0)
  })

  it("an abort reaches the waits when the runtime calls listeners without `this` (workerd before 2025-08-01)", async () => {
    // A signal as such a runtime dispatches it: the listener gets the event, with currentTarget, and no `this`.
    const listeners = new Set<(e: Event) => void>()
    const signal = {
      aborted: false,
      reason: undefined as unknown,
      addEventListener: (_: string, fn: (e: Event) => void) => listeners.add(fn),
      removeEventListener: (_: string, fn: (e: Event) => void) => listeners.delete(fn),
    }
    const slept = systemClock.sleep(3600, signal as unknown as AbortSignal)
    Object.assign(signal, { aborted: true, reason: new Error("timed out") })
    for (const fn of listeners)
      fn.call(undefined, { type: "abort", currentTarget: signal } as unknown as Event)
    await expect(slept).rejects.toThrow("timed out")
  })

  it("abort(null) rejects a wait with an AbortError, not with null", async () => {
    const aborter = new AbortController()
    const slept = systemClock.sleep(3600, aborter.signal)
    aborter.abort(null)
    await expect(slept).rejects.toMatchObject({ name: "AbortError" })
  })

  it("twenty redispatches polling one call in flight share one signal's listener and all replay its result", async () => {
    const s = countedSignal()
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      pollInterval: 0.005,
      onWarning: () => {},
    })
    let runs = 0
    const t = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async () => {
        runs++
        await sleep(60)
        return "paid"
      },
    )
    const calls = Array.from({ length: 20 }, () => t({}, { toolCallId: "c1", signal: s.signal }))
    expect(await Promise.all(calls)).toEqual(Array(20).fill("paid"))
    expect(runs).toBe(1)
    expect(s.most()).toBe(1)
    expect(s.listening()).toBe(0)
  })
})
