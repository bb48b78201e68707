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
    let renewed = false
    for (let i = 0; i < 500 && !renewed; i++) {
      renewed = (await heartbeat()) === at
      if (!renewed) await new Promise((r) => setTimeout(r, 5))
    }
    expect(renewed, `a renewal at ${at} (step ${step})`).toBe(true)
  }
}
