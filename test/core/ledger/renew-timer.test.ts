import { describe, expect, it } from "vitest"
import { renewEvery } from "../../../src/core/ledger/clock.ts"

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
})
