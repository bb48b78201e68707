// The FIFO semaphore behind the request cap, tool fan-out and rlm_parallel: aborting waiters keeps the order of the
// rest, loses no permit, and costs O(1) per waiter (a model's 40,000-item rlm_parallel list aborted in ~840 ms when
// each abort scanned the queue); serving one costs O(1) too. Counted, not timed.
import { afterEach, describe, expect, it } from "vitest"
import { Semaphore } from "../../../src/core/harness/semaphore.ts"

const scans = ["indexOf", "lastIndexOf", "includes", "splice", "filter", "findIndex", "shift"] as const
const originals = scans.map((m) => Array.prototype[m])
afterEach(() => {
  scans.forEach((m, i) => {
    ;(Array.prototype as unknown as Record<string, unknown>)[m] = originals[i]
  })
})

/** Counts the array elements the calls in `fn` scan or move with the array methods a queue removal would use. */
async function elementsScanned(fn: () => void | Promise<void>): Promise<number> {
  let n = 0
  scans.forEach((m, i) => {
    const orig = originals[i] as (...a: unknown[]) => unknown
    ;(Array.prototype as unknown as Record<string, unknown>)[m] = function (
      this: unknown[],
      ...a: unknown[]
    ) {
      n += this.length
      return orig.apply(this, a)
    }
  })
  try {
    await fn()
  } finally {
    scans.forEach((m, i) => {
      ;(Array.prototype as unknown as Record<string, unknown>)[m] = originals[i]
    })
  }
  return n
}

describe("Semaphore", () => {
  it("aborts N waiters without scanning the queue per waiter (one signal, and one signal each)", async () => {
    const n = 20_000
    for (const shared of [true, false]) {
      const sem = new Semaphore(1)
      const hold = await sem.acquire()
      const one = new AbortController()
      const controllers = Array.from({ length: n }, () => (shared ? one : new AbortController()))
      const waits = controllers.map((c) =>
        sem.acquire(c.signal).then(
          () => "granted",
          () => "aborted",
        ),
      )
      // Before: about n²/2 elements (2e8 here) for either shape.
      const scanned = await elementsScanned(() => {
        if (shared) one.abort()
        else for (const c of controllers) c.abort()
      })
      expect(scanned).toBeLessThanOrEqual(n)
      expect(new Set(await Promise.all(waits))).toEqual(new Set(["aborted"]))
      // The aborted waiters are skipped, and the permit comes back.
      hold()
      expect(sem.inUse).toBe(0)
      const again = await sem.acquire()
      expect(sem.inUse).toBe(1)
      again()
    }
  })

  it("serves N waiters in order without moving the queue per grant", async () => {
    // Array#shift moves every element of an array this long: 160,000 waiters took 34 s to serve.
    const n = 20_000
    const sem = new Semaphore(1)
    const hold = await sem.acquire()
    const order: number[] = []
    const waits = Array.from({ length: n }, (_, i) =>
      sem.acquire().then((release) => {
        order.push(i)
        release()
      }),
    )
    const scanned = await elementsScanned(async () => {
      hold()
      await Promise.all(waits)
    })
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i))
    expect(scanned).toBeLessThanOrEqual(n)
    expect(sem.inUse).toBe(0)
    expect(sem.peak).toBe(1)
  })

  it("keeps FIFO order among the waiters left after interleaved aborts, and loses no permit", async () => {
    const sem = new Semaphore(2)
    const held = [await sem.acquire(), await sem.acquire()]
    const granted: number[] = []
    const evens = new AbortController()
    const releases: Array<() => void> = []
    const waits = Array.from({ length: 12 }, (_, i) => {
      const own = new AbortController()
      const signal = i % 2 === 0 ? evens.signal : i % 3 === 0 ? own.signal : undefined
      const p = sem.acquire(signal).then(
        (release) => {
          granted.push(i)
          releases.push(release)
        },
        () => {},
      )
      if (i === 9) own.abort()
      return p
    })
    evens.abort()
    // Left: 1, 3, 5, 7, 11 (9 aborted on its own signal), granted two at a time as permits free.
    for (const r of held) r()
    await Promise.resolve()
    await Promise.resolve()
    expect(granted).toEqual([1, 3])
    while (granted.length < 5) {
      releases.shift()?.()
      await new Promise((r) => setTimeout(r, 0))
    }
    await Promise.all(waits)
    expect(granted).toEqual([1, 3, 5, 7, 11])
    for (const r of releases) r()
    expect(sem.inUse).toBe(0)
    expect(sem.peak).toBe(2)
    // Both permits are free again: two immediate grants.
    const a = await sem.acquire()
    const b = await sem.acquire()
    expect(sem.inUse).toBe(2)
    a()
    b()
  })
})
