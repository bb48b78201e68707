/** Time source for leases and polling, in epoch seconds. Tests inject one to move time without sleeping. */
export interface Clock {
  now(): number
  /** Waits `seconds`; rejects with the signal's reason when it aborts. */
  sleep(seconds: number, signal?: AbortSignal): Promise<void>
}

// What waiting rejects with: the signal's reason, or an AbortError when it has none (abort(null), a polyfill),
// so that a caller reading `err.name` does not fail on null.
const abortError = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("The operation was aborted.", "AbortError")

/**
 * Timers take at most 2^31 - 1 ms (about 24.8 days) and fire at once beyond it: a 90-day lease renewed every third
 * of it renewed every millisecond. Waking early is harmless here (a renewal or a poll comes sooner), so clamp.
 * (A negative delay is 0 to every timer.)
 */
export const timerMs = (seconds: number): number => Math.min(seconds * 1000, 2 ** 31 - 1)

export const systemClock: Clock = {
  now: () => Date.now() / 1000,
  sleep(seconds, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError(signal))
      const off =
        signal &&
        onAbort(signal, () => {
          clearTimeout(timer)
          reject(abortError(signal))
        })
      const timer = setTimeout(() => {
        off?.()
        resolve()
      }, timerMs(seconds))
    })
  },
}

/** A clock that only moves when told to; `sleep` advances it and yields to other tasks. */
export class ManualClock implements Clock {
  #now: number
  constructor(start = 1_800_000_000) {
    this.#now = start
  }
  now(): number {
    return this.#now
  }
  advance(seconds: number): void {
    this.#now += seconds
  }
  async sleep(seconds: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw abortError(signal)
    this.#now += seconds
    // A macrotask, so that other claimants' storage calls and bodies get to run while this one "sleeps".
    await new Promise((r) => setTimeout(r, 0))
    if (signal?.aborted) throw abortError(signal)
  }
}

// A framework hands every call of a step one signal, and Node warns of a leak past ten listeners on it (twenty
// redispatches polling one call printed MaxListenersExceededWarning in the application's log). One listener per
// signal, taken off when its last call is done: Node keeps an AbortSignal.any() or timeout() signal alive while it
// has a listener, and frameworks make one per call.
const fans = new WeakMap<AbortSignal, Set<() => void>>()

/**
 * The one listener, on every signal. It finds its signal by the event's `currentTarget`: workerd sets a listener's
 * `this` to the target only from compatibility date 2025-08-01 (before, aborts were missed and a retry paid twice).
 */
function fire(event: Event): void {
  for (const g of fans.get(event.currentTarget as AbortSignal) ?? []) g()
}

/** Runs `fn` once when `signal` aborts; returns what takes it off again. */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let fns = fans.get(signal)
  if (!fns) {
    fns = new Set()
    fans.set(signal, fns)
    signal.addEventListener("abort", fire, { once: true })
  }
  const own = fns
  own.add(fn)
  return () => {
    if (own.delete(fn) && !own.size && fans.get(signal) === own) {
      fans.delete(signal)
      signal.removeEventListener("abort", fire)
    }
  }
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal)
}

/**
 * Calls `renew` every `seconds` while a claim is held; the first rejection `retry` does not accept stops it (the claim
 * is gone), a transient one is retried on the next tick. The timer never keeps a process alive. Returns the stop.
 * `firstAfter` (seconds, when the claim was taken a while ago) brings the first call forward.
 */
export function renewEvery(
  seconds: number,
  renew: () => Promise<unknown>,
  retry: (error: unknown) => boolean,
  firstAfter = seconds,
): () => void {
  let timer: ReturnType<typeof setInterval> | undefined
  let stopped = false
  const stop = () => {
    stopped = true
    clearInterval(timer)
  }
  const tick = () => {
    renew().catch((e: unknown) => {
      if (!retry(e)) stop()
    })
  }
  const every = () => {
    timer = setInterval(tick, timerMs(seconds))
    ;(timer as { unref?: () => void }).unref?.()
  }
  if (firstAfter >= seconds) every()
  else {
    timer = setTimeout(() => {
      tick()
      if (!stopped) every()
    }, timerMs(firstAfter))
    ;(timer as { unref?: () => void }).unref?.()
  }
  return stop
}
