import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import {
  MemoryStateFlushStore,
  StateFlush,
  StateFlushError,
  type StateFlushRun,
  type StateFlushStore,
  type StateSnapshot,
} from "../../../src/state.ts"
import { tempDirs } from "../../temp-dirs.ts"

const freshDir = tempDirs("mycelium-state-adv-")
const tmpFile = () => {
  const dir = freshDir()
  return join(dir, "state.json")
}
const tick = () => new Promise((r) => setTimeout(r, 0))

describe("state a body records", () => {
  it("a key named __proto__ is kept as data: it neither vanishes nor promotes its members to the top level", async () => {
    const flush = new StateFlush()
    await flush.run("r", (run) => {
      run.record(JSON.parse('{"__proto__": {"admin": true}, "page": 1}'))
    })
    const s = await flush.load("r")
    expect(Object.keys(s?.state ?? {}).sort()).toEqual(["__proto__", "page"])
    expect(Object.hasOwn(s?.state ?? {}, "admin")).toBe(false)
    expect(JSON.stringify(s?.state)).toBe('{"__proto__":{"admin":true},"page":1}')
  })

  it("a cyclic value is a StateFlushError from record(), and the state recorded so far is what gets flushed", async () => {
    const flush = new StateFlush()
    const o: Record<string, unknown> = {}
    o.self = o
    const err = await flush
      .run("r", (run) => {
        run.record({ page: 2 })
        run.record({ bad: o })
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateFlushError)
    const s = await flush.load("r")
    expect(s).toMatchObject({ status: "error", state: { page: 2 } })
  })

  it("an initial state or patch that is not an object is a StateFlushError; nothing unreadable is stored", async () => {
    const store = new FileStateFlushStore(tmpFile(), { fsync: false })
    const flush = new StateFlush({ storage: store })
    let ran = 0
    // An array (or a toJSON() giving one) took the records invisibly and was stored as a snapshot the store then
    // refused as corrupt: the run's resume was gone.
    for (const initial of [[], { toJSON: () => [1] }, "xy", 5]) {
      const err = await flush
        .run("r", () => void ran++, { initial: initial as unknown as Record<string, unknown> })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(StateFlushError)
    }
    expect(ran).toBe(0)
    expect(await flush.load("r")).toBeNull()
    // A patch of null, a list or a string: typed, never a bare TypeError; the run ends as any failing body does.
    for (const patch of [null, [5, 6], "ab"]) {
      const err = await flush
        .run("p", (run) => {
          run.record({ page: 1 })
          run.record(patch as unknown as Record<string, unknown>)
        })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(StateFlushError)
      expect(await flush.resume("p")).toEqual({ page: 1 })
    }
  })

  it("a run id that is not a string is refused before anything is stored under it", async () => {
    const flush = new StateFlush({ storage: new FileStateFlushStore(tmpFile(), { fsync: false }) })
    // A number was saved as run_id 5, which the file store then reads as a corrupt snapshot.
    const err = await flush.run(5 as unknown as string, () => "done").catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateFlushError)
    expect(await flush.load("5")).toBeNull()
  })

  it("a 20 MB state round-trips through the file store", async () => {
    const flush = new StateFlush({ storage: new FileStateFlushStore(tmpFile(), { fsync: false }) })
    const big = "x".repeat(1_000_000)
    await flush.run("big", (run) => {
      for (let i = 0; i < 20; i++) run.record({ [`k${i}`]: big })
    })
    const s = await flush.resume("big")
    expect(Object.keys(s)).toHaveLength(20)
    expect((s.k19 as string).length).toBe(1_000_000)
  })
})

describe("endings after the final snapshot", () => {
  it("the client disconnects after the body completed the run itself: the completed snapshot stays", async () => {
    const flush = new StateFlush()
    const disconnect = new AbortController()
    let release!: () => void
    const p = flush.run(
      "r",
      async (run) => {
        run.record({ done: true })
        await run.complete()
        disconnect.abort() // e.g. the HTTP client hangs up while the body tidies up
        await new Promise<void>((r) => {
          release = r
        })
        return "ok"
      },
      { disconnectSignal: disconnect.signal },
    )
    // run() rejects as soon as the disconnect lands, before the body returns: handle it from the start.
    const settled = p.catch(() => undefined)
    await tick()
    release?.()
    await settled
    expect((await flush.load("r"))?.status).toBe("completed")
  })

  it("a cancel followed by a disconnect keeps the cancel snapshot (the first ending wins)", async () => {
    const flush = new StateFlush()
    const cancel = new AbortController()
    const disconnect = new AbortController()
    const p = flush.run("r", () => new Promise<never>(() => {}), {
      signal: cancel.signal,
      disconnectSignal: disconnect.signal,
    })
    cancel.abort(new Error("user cancelled"))
    disconnect.abort()
    await expect(p).rejects.toThrow("user cancelled")
    await tick()
    expect(await flush.load("r")).toMatchObject({ status: "aborted", reason: "cancel" })
  })

  it("a body that ignores the cancel and then checkpoints, completes, flushes or disconnects cannot replace the aborted snapshot", async () => {
    for (const [name, end] of [
      ["checkpoint()", (run: StateFlushRun) => run.checkpoint()],
      ["complete()", (run: StateFlushRun) => run.complete()],
      ["flush('completed')", (run: StateFlushRun) => run.flush("completed")],
      ["disconnect()", (run: StateFlushRun) => run.disconnect()],
    ] as const) {
      const flush = new StateFlush()
      const cancel = new AbortController()
      let keepGoing!: () => void
      const more = new Promise<void>((r) => {
        keepGoing = r
      })
      const body = flush.run(
        "r",
        async (run) => {
          run.record({ page: 1 })
          await more
          run.record({ page: 2 })
          await end(run)
        },
        { signal: cancel.signal },
      )
      await tick()
      cancel.abort("stop")
      await expect(body).rejects.toBe("stop")
      keepGoing()
      await tick()
      await tick()
      // The next attempt must see a cancelled run to resume, not a completed one to skip.
      expect(await flush.load("r"), name).toMatchObject({
        status: "aborted",
        reason: "cancel",
        state: { page: 1 },
      })
    }
  })

  it("an ending that writes nothing (not in flushOn, flushOnComplete off) still ends the run: later calls write nothing", async () => {
    const late: Array<[string, (run: StateFlushRun) => Promise<unknown>]> = [
      ["checkpoint()", (run) => run.checkpoint()],
      ["complete()", (run) => run.complete()],
      ["flush('completed')", (run) => run.flush("completed")],
      ["disconnect()", (run) => run.disconnect()],
    ]
    for (const ending of ["cancel", "error", "return"] as const) {
      for (const [name, call] of late) {
        const storage = new MemoryStateFlushStore()
        const flush = new StateFlush({ storage, flushOn: ["disconnect"], flushOnComplete: false })
        const cancel = new AbortController()
        let handle!: StateFlushRun
        const p = flush.run(
          "r",
          async (run) => {
            handle = run
            run.record({ page: 1 })
            if (ending === "cancel") await new Promise((r) => setTimeout(r, 20))
            if (ending === "error") throw new RangeError("boom")
          },
          { signal: cancel.signal },
        )
        if (ending === "cancel") {
          await tick()
          cancel.abort("stop")
        }
        await p.catch(() => {})
        await call(handle) // e.g. a body that ignored the cancel, or a task it left running
        await new Promise((r) => setTimeout(r, 30))
        expect(await flush.load("r"), `${ending}, then ${name}`).toBeNull()
      }
    }
  })

  it("a disconnect writes even with flushOn [] and flushOnComplete false: completed, as the original's disconnect()", async () => {
    const flush = new StateFlush({ flushOn: [], flushOnComplete: false })
    const disconnect = new AbortController()
    const p = flush.run("r", () => new Promise<never>(() => {}), { disconnectSignal: disconnect.signal })
    disconnect.abort()
    await expect(p).rejects.toBeDefined()
    expect(await flush.load("r")).toMatchObject({ status: "completed", reason: null })
  })

  it("before the run ends, the body's own snapshots replace each other (the original's explicit flush)", async () => {
    const flush = new StateFlush()
    await flush.run("r", async (run) => {
      await run.complete()
      await run.disconnect()
    })
    expect(await flush.load("r")).toMatchObject({ status: "aborted", reason: "disconnect" })
  })
})

describe("concurrent writers and outages", () => {
  it("60 runs flushing at once into one file, through two store objects: every snapshot is there", async () => {
    const path = tmpFile()
    const a = new StateFlush({ storage: new FileStateFlushStore(path, { fsync: false }) })
    const b = new StateFlush({ storage: new FileStateFlushStore(path, { fsync: false }) })
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (i % 2 ? a : b).run(`r${i}`, async (run) => {
          run.record({ i })
          await run.checkpoint()
          run.record({ i, done: true })
        }),
      ),
    )
    const check = new FileStateFlushStore(path)
    for (let i = 0; i < 60; i++)
      expect(await check.load(`r${i}`)).toMatchObject({ status: "completed", state: { i, done: true } })
  })

  it("one run id written concurrently: the last write to finish wins whole, never a mix", async () => {
    const path = tmpFile()
    const flushes = Array.from(
      { length: 10 },
      () => new StateFlush({ storage: new FileStateFlushStore(path, { fsync: false }) }),
    )
    await Promise.all(
      flushes.map((f, i) => f.run("same", (run) => run.record({ writer: i, [`only${i}`]: true }))),
    )
    const s = await new FileStateFlushStore(path).load("same")
    const writer = s?.state.writer as number
    expect(s?.state).toEqual({ writer, [`only${writer}`]: true })
  })

  it("an outage during the error ending fails closed: the run rejects and nothing half-written is left", async () => {
    const inner = new MemoryStateFlushStore()
    let down = false
    const storage: StateFlushStore = {
      load: (id) => inner.load(id),
      save: async (s: StateSnapshot) => {
        if (down) throw new StateFlushError("store unavailable")
        return inner.save(s)
      },
    }
    const flush = new StateFlush({ storage })
    await flush.run(
      "r",
      async (run) => {
        run.record({ page: 1 })
        await run.checkpoint()
      },
      {},
    )
    const before = await flush.load("r")
    down = true
    const err = await flush
      .run("r", async (run) => {
        run.record({ page: 9 })
        throw new Error("body failed")
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    expect(await flush.load("r")).toEqual(before)
    // The outage does not hide why the run failed: a typed error names both, with the body's error as its cause.
    expect(err).toBeInstanceOf(StateFlushError)
    expect((err as Error).message).toContain("Error: body failed")
    expect((err as Error).message).toContain("store unavailable")
    expect(((err as Error).cause as Error).message).toBe("body failed")
  })
})

describe("a body that flushes garbage", () => {
  it("an unknown status is a StateFlushError and nothing unreadable is stored", async () => {
    const path = tmpFile()
    const flush = new StateFlush({ storage: new FileStateFlushStore(path, { fsync: false }) })
    const err = await flush
      .run("r", async (run) => {
        run.record({ page: 1 })
        await run.flush("hacked" as never)
      })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StateFlushError)
    // The store still reads: the error ending wrote a proper snapshot.
    expect(await flush.load("r")).toMatchObject({ status: "error", state: { page: 1 } })
  })

  it("a reason or error that is not a string is stored as text, not dropped", async () => {
    const flush = new StateFlush()
    await flush.run("r", (run) => run.flush("aborted", { reason: 42 as never, error: { code: 1 } as never }))
    expect(await flush.load("r")).toMatchObject({ status: "aborted", reason: "42", error: "[object Object]" })
  })
})

describe("a run whose signal is already aborted", () => {
  it("does not start the body; the snapshot is aborted/cancel and run() rejects with the reason", async () => {
    const flush = new StateFlush()
    let started = 0
    const err = await flush
      .run(
        "r",
        () => {
          started++
        },
        { signal: AbortSignal.abort("gone"), initial: { page: 4 } },
      )
      .catch((e: unknown) => e)
    expect(err).toBe("gone")
    await tick()
    expect(started).toBe(0)
    expect(await flush.load("r")).toMatchObject({ status: "aborted", reason: "cancel", state: { page: 4 } })
  })
})

describe("an Error whose text cannot be made", () => {
  it("a body throwing one: the caller gets it and the run ends as error with its state", async () => {
    const flush = new StateFlush()
    const thrown = Object.assign(new Error("x"), { message: Symbol("s") })
    await expect(
      flush.run("r", (run) => {
        run.record({ page: 1 })
        throw thrown
      }),
    ).rejects.toBe(thrown)
    expect(await flush.load("r")).toMatchObject({ status: "error", state: { page: 1 } })
  })

  it("a toJSON throwing one: StateFlushError, not a TypeError", async () => {
    const flush = new StateFlush()
    const page = {
      toJSON() {
        throw Object.defineProperty(new Error("y"), "name", {
          get() {
            throw new Error("no name")
          },
        })
      },
    }
    await expect(flush.run("r", (run) => run.record({ page }))).rejects.toBeInstanceOf(StateFlushError)
  })
})
