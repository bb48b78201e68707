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

describe("Semaphore against a model queue", () => {
  it("matches a plain FIFO model under seeded interleavings of acquire, release, abort and re-acquire", async () => {
    // Every waiter's outcome and grant order, and the permits in use, after each step: aborts of one waiter, of
    // several sharing a signal, of a signal already aborted, after a grant, and releases called twice.
    let seed = 42
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return Math.floor((seed / 2 ** 31) * n) // the high bits: the low ones of this generator cycle quickly
    }
    const flush = async () => {
      for (let i = 0; i < 4; i++) await Promise.resolve()
    }
    for (let round = 0; round < 40; round++) {
      const permits = 1 + rand(3)
      const sem = new Semaphore(permits)
      const shared = Array.from({ length: 3 }, () => new AbortController())
      const model = { free: permits, queue: [] as number[], granted: [] as number[] }
      const signalOf: Array<AbortController | undefined> = []
      const outcome: Array<"waiting" | "granted" | "aborted"> = []
      const got: number[] = []
      const held = new Map<number, () => void>()
      const released = new Set<number>()
      for (let step = 0; step < 120; step++) {
        const op = rand(10)
        if (op < 4) {
          const id = outcome.length
          const kind = rand(4)
          const c = kind === 0 ? undefined : kind === 1 ? new AbortController() : shared[rand(3)]
          if (c && kind === 1 && rand(4) === 0) c.abort() // a signal already aborted
          signalOf.push(c)
          outcome.push("waiting")
          if (c?.signal.aborted) outcome[id] = "aborted"
          else if (model.free > 0) {
            model.free--
            model.granted.push(id)
          } else model.queue.push(id)
          sem.acquire(c?.signal).then(
            (r) => {
              outcome[id] = "granted"
              got.push(id)
              held.set(id, r)
            },
            () => {
              outcome[id] = "aborted"
            },
          )
        } else if (op < 7 && held.size > 0) {
          const ids = [...held.keys()]
          const id = ids[rand(ids.length)]!
          const r = held.get(id)!
          if (rand(3) > 0) held.delete(id) // else released twice: the second call must do nothing
          r()
          if (!released.has(id)) {
            released.add(id)
            const next = model.queue.shift()
            if (next === undefined) model.free++
            else model.granted.push(next)
          }
        } else {
          const own = signalOf.filter((c, id) => c && !shared.includes(c) && outcome[id] !== "aborted")
          const pick = rand(2) === 0 ? shared[rand(3)] : own[rand(own.length)]
          if (pick && !pick.signal.aborted) {
            pick.abort()
            model.queue = model.queue.filter((id) => signalOf[id] !== pick)
          }
          if (pick && shared.includes(pick)) shared[shared.indexOf(pick)] = new AbortController()
        }
        await flush()
        expect(got).toEqual(model.granted)
        expect(sem.inUse).toBe(model.granted.length - released.size)
        for (const id of model.queue) expect(outcome[id]).toBe("waiting")
        expect(outcome.filter((o) => o === "waiting")).toHaveLength(model.queue.length)
      }
      // Every permit handed back until nothing waits: then all of them are free, and no more were ever held.
      for (;;) {
        await flush()
        const open = [...held].filter(([id]) => !released.has(id))
        if (open.length === 0) break
        for (const [id, r] of open) {
          released.add(id)
          r()
        }
      }
      expect(outcome).not.toContain("waiting")
      expect(sem.inUse).toBe(0)
      expect(sem.peak).toBeLessThanOrEqual(permits)
      const all = await Promise.all(Array.from({ length: permits }, () => sem.acquire()))
      expect(sem.inUse).toBe(permits)
      for (const r of all) r()
    }
  })
})
