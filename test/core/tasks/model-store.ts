// The task model's store (model-random.test.ts): one shared TaskStore (memory or file) that runs one operation at a
// time and reports every write that landed, with its writer, to the model; and each worker's connection to it, which
// the scheduler can partition (calls wait for the heal), break (calls fail; a swap may land before its answer is
// lost) or kill with its worker (calls never answer).
import type { StoredTask, TaskRecord, TaskStore } from "../../../src/tasks.ts"

/** What the model sees of one landed write: the record it replaced (null: none) and the one written. */
export type WriteObserver = (
  writer: string,
  requestId: string,
  prev: TaskRecord | null,
  next: TaskRecord,
) => void

export class ObservedTaskStore {
  readonly inner: TaskStore
  #chain: Promise<unknown> = Promise.resolve()
  /** Operations queued or running: the scheduler waits for none before it checks. */
  busy = 0
  writes = 0
  constructor(
    inner: TaskStore,
    readonly observe: WriteObserver,
  ) {
    this.inner = inner
  }

  // One at a time: the model sees writes in the order they landed, and the file store's lock never contends (its
  // retry sleeps are timers, which the model's fake timers would hold).
  #serial<T>(op: () => Promise<T>): Promise<T> {
    this.busy++
    const run = this.#chain.then(op)
    this.#chain = run.catch(() => undefined).finally(() => this.busy--)
    return run
  }

  get(requestId: string): Promise<StoredTask | null> {
    return this.#serial(() => this.inner.get(requestId))
  }

  swap(writer: string, requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    return this.#serial(async () => {
      const prev = await this.inner.get(requestId)
      const version = await this.inner.swap(requestId, expected, next)
      if (version !== null) {
        this.writes++
        this.observe(writer, requestId, prev && { row: prev.row, lease: prev.lease }, next)
      }
      return version
    })
  }

  async list(): Promise<StoredTask[]> {
    return this.#serial(async () => {
      const out: StoredTask[] = []
      for await (const t of this.inner.list()) out.push(t)
      return out
    })
  }
}

export type Link = "up" | "partitioned" | "failing" | "dead"

/** Thrown by a broken connection: what a driver throws on a reset. */
export class ConnectionReset extends Error {
  override readonly name = "ConnectionReset"
}

/** One worker's connection to the shared store. */
export class WorkerLink implements TaskStore {
  link: Link = "up"
  /** Calls that failed (or were answered lost): a call that saw one may fail with TaskStoreUnavailableError. */
  failures = 0
  #held: Array<() => void> = []
  constructor(
    readonly name: string,
    readonly shared: ObservedTaskStore,
    /** Chance that a swap on a failing link lands before its answer is lost. */
    readonly lostAnswer: () => boolean,
  ) {}

  set(link: Link): void {
    this.link = link
    if (link === "dead") this.#held = []
    if (link === "up" || link === "failing") {
      const held = this.#held
      this.#held = []
      for (const go of held) go()
    }
  }

  async #through<T>(op: () => Promise<T>, write: boolean): Promise<T> {
    if (this.link === "dead") return new Promise<T>(() => {})
    if (this.link === "partitioned") await new Promise<void>((go) => this.#held.push(go))
    // The worker died while the call waited: it never reaches the store. (Read again: the await may have changed it.)
    if ((this.link as Link) === "dead") return new Promise<T>(() => {})
    if (this.link === "failing") {
      this.failures++
      if (write && this.lostAnswer()) await op()
      throw new ConnectionReset(`${this.name}: connection reset`)
    }
    return op()
  }

  get(requestId: string): Promise<StoredTask | null> {
    return this.#through(() => this.shared.get(requestId), false)
  }

  swap(requestId: string, expected: string | null, next: TaskRecord): Promise<string | null> {
    return this.#through(() => this.shared.swap(this.name, requestId, expected, next), true)
  }

  async *list(): AsyncIterable<StoredTask> {
    yield* await this.#through(() => this.shared.list(), false)
  }
}
