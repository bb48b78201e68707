// A FIFO counting semaphore whose waiters can be aborted. Used for the run-wide request cap and for tool fan-out.

interface Waiter {
  readonly grant: () => void
  readonly fail: (reason: unknown) => void
  readonly signal: AbortSignal | undefined
  next?: Waiter
  /** Aborted: left in the queue and skipped when it comes up, so an abort costs O(1), not a scan of the queue. */
  gone?: boolean
}

export class Semaphore {
  #free: number
  // A linked queue whose head is the last waiter served (at first a placeholder); the waiters follow it. Array#shift
  // moves every element of a long array (one in the large-object space is never trimmed in place): 160,000 waiters
  // took 24 s to serve.
  #head = {} as Waiter
  #tail = this.#head
  // One abort listener per signal, not per waiter: a 50-call batch waiting on one task signal must not pile up
  // listeners (and trip Node's leak warning).
  readonly #bySignal = new Map<AbortSignal, { waiters: Set<Waiter>; onAbort: () => void }>()
  #inUse = 0
  /** Highest number of permits held at once: tests read it to prove the cap. */
  peak = 0

  constructor(readonly permits: number) {
    this.#free = permits
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
      const waiter: Waiter = {
        signal,
        grant: () => {
          this.#forget(waiter)
          resolve(this.#take())
        },
        fail: reject,
      }
      this.#tail = this.#tail.next = waiter
      if (signal) {
        let entry = this.#bySignal.get(signal)
        if (!entry) {
          const created = {
            waiters: new Set<Waiter>(),
            onAbort: () => {
              this.#bySignal.delete(signal)
              for (const w of created.waiters) {
                w.gone = true
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
      let next = this.#head.next
      while (next?.gone) next = next.next
      // Past the tail when every waiter left was aborted: the tail then heads an empty queue.
      this.#head = next ?? this.#tail
      if (next) next.grant()
      else this.#free++
    }
  }
}
