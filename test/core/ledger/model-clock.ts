// The model test's clock: time moves only when the scheduler says, and a sleeper (a poll, a wait for a death signal)
// wakes only once time has passed its deadline, in an order the scheduler picks. ManualClock's sleep moves time
// itself, so a poller would lapse the leases of the workers it waits for.
import type { Clock } from "../../../src/core/index.ts"

interface Sleeper {
  readonly until: number
  readonly wake: () => void
}

export class SchedulerClock implements Clock {
  #now = 1_800_000_000
  #sleepers: Sleeper[] = []

  now(): number {
    return this.#now
  }

  // No caller of the model passes a signal: every call either settles or is abandoned with its worker.
  sleep(seconds: number): Promise<void> {
    return new Promise((wake) => this.#sleepers.push({ until: this.#now + seconds, wake }))
  }

  /** Moves time on and wakes every sleeper whose deadline passed, in the order `order` leaves them. */
  advance(seconds: number, order: <T>(items: T[]) => T[]): number {
    this.#now += seconds
    const due = this.#sleepers.filter((s) => s.until <= this.#now)
    this.#sleepers = this.#sleepers.filter((s) => s.until > this.#now)
    for (const s of order(due)) s.wake()
    return due.length
  }

  get sleeping(): number {
    return this.#sleepers.length
  }
}

/**
 * A worker's own clock, `offset` seconds off the model's (the server's): it reads the time skewed and sleeps as long.
 * What a process whose clock is set wrong sees (test/adapters/servers/model-stores.test.ts, test/edge/model-remote.ts).
 */
export const skewed = (clock: SchedulerClock, offset: number): Clock => ({
  now: () => clock.now() + offset,
  sleep: (seconds) => clock.sleep(seconds),
})
