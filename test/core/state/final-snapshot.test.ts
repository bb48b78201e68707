// The final snapshot of a run: saved after every earlier save of the run (a slow checkpoint never lands over it), and
// when it cannot be stored, a StateSnapshotUnstoredError that says how the run ended instead of the store's error
// alone (nor a "run failed" for a run that returned).
import { describe, expect, it } from "vitest"
import {
  MemoryStateFlushStore,
  StateFlush,
  StateFlushError,
  type StateSnapshot,
  StateSnapshotUnstoredError,
} from "../../../src/state.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A store that refuses saves while `down`, counting what was asked of it. */
function flakyStore() {
  const inner = new MemoryStateFlushStore()
  const s = {
    down: false,
    attempts: [] as string[],
    load: (id: string) => inner.load(id),
    save: (snap: StateSnapshot) => {
      s.attempts.push(snap.status)
      return s.down ? Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")) : inner.save(snap)
    },
  }
  return s
}

describe("a final snapshot the store refuses", () => {
  it("after the body returned: StateSnapshotUnstoredError with the result; no error snapshot is attempted", async () => {
    const storage = flakyStore()
    const flush = new StateFlush({ storage })
    const err = await flush
      .run("r1", async (run) => {
        run.record({ page: 3 })
        await run.checkpoint()
        storage.down = true
        return "RESULT"
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
    expect(err).toBeInstanceOf(StateFlushError)
    expect(err).toMatchObject({
      code: "state_snapshot_unstored",
      runId: "r1",
      status: "completed",
      returned: true,
      result: "RESULT",
    })
    const e = err as StateSnapshotUnstoredError
    expect(e.message).toMatch(/^Run 'r1' returned, but its final snapshot \(completed\) was not stored/)
    expect(e.message).not.toContain("failed")
    expect((e.cause as Error).message).toContain("ECONNREFUSED")
    expect(storage.attempts).toEqual(["in-progress", "completed"])
    expect((await flush.load("r1"))?.status).toBe("in-progress")
  })

  it("a cancel while the store is down: StateSnapshotUnstoredError that keeps the abort reason", async () => {
    const storage = flakyStore()
    storage.down = true
    const flush = new StateFlush({ storage })
    const stop = new AbortController()
    const reason = new Error("user cancelled")
    const err = await flush
      .run(
        "r2",
        async (run) => {
          run.record({ a: 1 })
          setTimeout(() => stop.abort(reason), 10)
          await sleep(200)
          return 1
        },
        { signal: stop.signal },
      )
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
    expect(err).toMatchObject({ code: "state_snapshot_unstored", status: "aborted", returned: false })
    expect((err as StateSnapshotUnstoredError).abortReason).toBe(reason)
    expect((err as Error).message).toContain("was aborted (Error: user cancelled)")
    expect(((err as Error).cause as Error).message).toContain("ECONNREFUSED")
  })

  it("a cancel the body answers by rejecting on run.signal (as fetch does): the save failure still wins", async () => {
    const storage = flakyStore()
    storage.down = true
    const flush = new StateFlush({ storage })
    const stop = new AbortController()
    const reason = new Error("user cancelled")
    setTimeout(() => stop.abort(reason), 10)
    const err = await flush
      .run(
        "r4",
        (run) =>
          new Promise((_, reject) =>
            run.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))),
          ),
        { signal: stop.signal },
      )
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateSnapshotUnstoredError)
    expect(err).toMatchObject({ status: "aborted", returned: false, abortReason: reason })
    expect(((err as Error).cause as Error).message).toContain("ECONNREFUSED")
  })

  it("a disconnect while the store is down: likewise, with the disconnect's reason", async () => {
    const storage = flakyStore()
    storage.down = true
    const flush = new StateFlush({ storage })
    const gone = new AbortController()
    const err = await flush
      .run(
        "r3",
        async () => {
          setTimeout(() => gone.abort("client left"), 10)
          await sleep(200)
        },
        { disconnectSignal: gone.signal },
      )
      .catch((e: unknown) => e)
    expect(err).toMatchObject({
      code: "state_snapshot_unstored",
      status: "aborted",
      abortReason: "client left",
    })
  })
})

describe("saves of one run land in the order they were asked for", () => {
  /** Saves the first request slowly (a reconnect), later ones fast. */
  function slowFirstStore() {
    const inner = new MemoryStateFlushStore()
    let n = 0
    const landed: string[] = []
    return {
      landed,
      load: (id: string) => inner.load(id),
      save: async (s: StateSnapshot) => {
        await sleep(n++ === 0 ? 100 : 5)
        landed.push(s.status)
        await inner.save(s)
      },
    }
  }

  it("a cancel during a slow checkpoint: the aborted snapshot lands last and stays", async () => {
    const storage = slowFirstStore()
    const flush = new StateFlush({ storage })
    const stop = new AbortController()
    await expect(
      flush.run(
        "r",
        async (run) => {
          run.record({ page: 1 })
          const cp = run.checkpoint()
          setTimeout(() => stop.abort(new Error("user cancelled")), 10)
          await cp
          return "done"
        },
        { signal: stop.signal },
      ),
    ).rejects.toThrow("user cancelled")
    await sleep(200)
    expect(storage.landed).toEqual(["in-progress", "aborted"])
    expect(await flush.load("r")).toMatchObject({ status: "aborted", reason: "cancel", state: { page: 1 } })
  })

  it("a checkpoint not awaited before the body returns: completed lands last, with the state as of each call", async () => {
    const storage = slowFirstStore()
    const flush = new StateFlush({ storage })
    await flush.run("r", (run) => {
      run.record({ page: 1 })
      void run.checkpoint()
      run.record({ page: 2 })
      return "done"
    })
    await sleep(200)
    expect(storage.landed).toEqual(["in-progress", "completed"])
    expect(await flush.load("r")).toMatchObject({ status: "completed", state: { page: 2 } })
  })
})
