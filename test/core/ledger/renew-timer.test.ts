import { describe, expect, it } from "vitest"
import { renewEvery, systemClock } from "../../../src/core/ledger/clock.ts"

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
