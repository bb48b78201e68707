// A FIFO counting semaphore whose waiters can be aborted. Used for the run-wide request cap and for tool fan-out.

interface Waiter {
  readonly grant: () => void
  readonly fail: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  // Doubly linked, so an abort unlinks its waiter in O(1) instead of scanning the queue, and leaves nothing behind.
  prev: Waiter
  next: Waiter
}

export class Semaphore {
  #free: number
  // A ring around a placeholder: its next is the first waiter, its prev the last. Array#shift moves every element of
  // a long array (one in the large-object space is never trimmed in place): 160,000 waiters took 24 s to serve. An
  // aborted waiter left in the queue until a release skipped it kept its signal and reason for as long as the permits
  // stayed held (20,000 timeouts behind a hung request: all 20,000).
  readonly #queue = {} as Waiter
  // One abort listener per signal, not per waiter: a 50-call batch waiting on one task signal must not pile up
  // listeners (and trip Node's leak warning).
  readonly #bySignal = new Map<AbortSignal, { waiters: Set<Waiter>; onAbort: () => void }>()
  #inUse = 0
  /** Highest number of permits held at once: tests read it to prove the cap. */
  peak = 0

  constructor(readonly permits: number) {
    this.#free = permits
    this.#queue.prev = this.#queue.next = this.#queue
  }

  get inUse(): number {
    return this.#inUse
  }

  /** Resolves with a release function once a permit is free; rejects with the signal's reason on abort. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.#free > 0) {
      this.#free--
      return Promise.resolve(this.#take())
    }
    return new Promise((resolve, reject) => {
      const q = this.#queue
      const waiter: Waiter = {
        signal,
        prev: q.prev,
        next: q,
        grant: () => {
          this.#forget(waiter)
          resolve(this.#take())
        },
        fail: reject,
      }
      q.prev = q.prev.next = waiter
      if (signal) {
        let entry = this.#bySignal.get(signal)
        if (!entry) {
          const created = {
            waiters: new Set<Waiter>(),
            onAbort: () => {
              this.#bySignal.delete(signal)
              for (const w of created.waiters) {
                w.prev.next = w.next
                w.next.prev = w.prev
                w.fail(signal.reason)
              }
            },
          }
          entry = created
          this.#bySignal.set(signal, entry)
          signal.addEventListener("abort", entry.onAbort, { once: true })
        }
        entry.waiters.add(waiter)
      }
    })
  }

  #forget(w: Waiter): void {
    if (!w.signal) return
    const entry = this.#bySignal.get(w.signal)
    if (!entry) return
    entry.waiters.delete(w)
    if (entry.waiters.size === 0) {
      w.signal.removeEventListener("abort", entry.onAbort)
      this.#bySignal.delete(w.signal)
    }
  }

  #take(): () => void {
    this.#inUse++
    if (this.#inUse > this.peak) this.peak = this.#inUse
    let released = false
    return () => {
      if (released) return
      released = true
      this.#inUse--
      const q = this.#queue
      const next = q.next
      if (next === q) this.#free++
      else {
        q.next = next.next
        next.next.prev = q
        next.grant()
      }
    }
  }
}
