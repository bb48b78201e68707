// Renewals proven without depending on scheduler timing: lease time runs on a manual clock, renewal ticks are real
// timers. Each step moves the clock on and waits (real time) for a renewal stamped at the new time.
import { expect } from "vitest"
import type { ManualClock } from "../../../src/testing.ts"

/** `steps` times: moves `clock` on by `seconds`, then waits for `heartbeat()` to read the clock's time. */
export async function expectRenewals(
  clock: ManualClock,
  heartbeat: () => Promise<number | null | undefined>,
  seconds: number,
  steps: number,
): Promise<void> {
  for (let step = 0; step < steps; step++) {
    clock.advance(seconds)
    const at = clock.now()
    // Up to 10 s of real time: a renewal timer waits its turn on a loaded machine (500 tries of 5 ms each, about
    // 2.5 s, once ran out in a CI run with the load average at 8).
    const until = Date.now() + 10_000
    let renewed = false
    while (!renewed && Date.now() < until) {
      renewed = (await heartbeat()) === at
      if (!renewed) await new Promise((r) => setTimeout(r, 5))
    }
    expect(renewed, `a renewal at ${at} (step ${step})`).toBe(true)
  }
}
