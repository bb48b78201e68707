// A FIFO counting semaphore whose waiters can be aborted. Used for the run-wide request cap and for tool fan-out.

export class Semaphore {
  #free: number
  readonly #waiters: Array<{ grant: () => void; signal: AbortSignal | undefined; onAbort: () => void }> = []
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
      const waiter = {
        signal,
        grant: () => {
          signal?.removeEventListener("abort", waiter.onAbort)
          resolve(this.#take())
        },
        onAbort: () => {
          const i = this.#waiters.indexOf(waiter)
          if (i >= 0) this.#waiters.splice(i, 1)
          reject(signal?.reason)
        },
      }
      signal?.addEventListener("abort", waiter.onAbort, { once: true })
      this.#waiters.push(waiter)
    })
  }

  #take(): () => void {
    this.#inUse++
    if (this.#inUse > this.peak) this.peak = this.#inUse
    let released = false
    return () => {
      if (released) return
      released = true
      this.#inUse--
      const next = this.#waiters.shift()
      if (next) next.grant()
      else this.#free++
    }
  }
}
