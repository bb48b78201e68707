import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { DurableObjectStateFlushStore } from "../../../src/adapters/durable-object-guards.ts"
import { LedgerFileCorruptError } from "../../../src/adapters/file.ts"
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import { testStateFlush } from "../../../src/conformance.ts"
import { InvalidOptionError, MyceliumError } from "../../../src/core/errors.ts"
import { LedgerStorageUnavailableError } from "../../../src/core/ledger/index.ts"
import {
  MemoryStateFlushStore,
  StateFlush,
  StateFlushError,
  type StateSnapshot,
  StateSnapshotTooLargeError,
  StateSnapshotUnstoredError,
  StateStoreUnavailableError,
} from "../../../src/state.ts"
import { tempDirs } from "../../temp-dirs.ts"

const freshDir = tempDirs("mycelium-state-")
const tmpFile = () => {
  const dir = freshDir()
  return join(dir, "state.json")
}

testStateFlush("file", () => {
  const path = tmpFile()
  return { storage: new FileStateFlushStore(path, { fsync: false }), peer: new FileStateFlushStore(path) }
})

it("the file is the original's layout: {run_id: snapshot} with its snake_case fields", async () => {
  const path = tmpFile()
  const flush = new StateFlush({ storage: new FileStateFlushStore(path), now: () => 1767225600.5 })
  await flush.run("r-1", (run) => run.record({ note: "café" }))
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({
    "r-1": {
      run_id: "r-1",
      status: "completed",
      state: { note: "café" },
      updated_at: 1767225600.5,
      reason: null,
      error: null,
    },
  })
  expect(readFileSync(path, "utf8")).toContain("caf\\u00e9")
})

it("resume of a run with no snapshot is StateFlushError with the original's message", async () => {
  const flush = new StateFlush({ storage: new FileStateFlushStore(tmpFile()) })
  const err = await flush.resume("r-404").catch((e: unknown) => e)
  expect(err).toBeInstanceOf(StateFlushError)
  expect(err).toMatchObject({ code: "state_flush_error", message: "No flushed state found for run 'r-404'" })
})

it("an unreadable store file is LedgerStorageUnavailableError, the fs error its cause", async () => {
  // Its folder made a file after the store was built: ENOTDIR; EACCES and EIO take the same path. (A directory, a
  // FIFO or a device at the path is LedgerFileCorruptError, as in every file store: file-not-regular.test.ts.)
  const folder = join(freshDir(), "runs")
  const path = join(folder, "state.json")
  const storage = new FileStateFlushStore(path)
  const flush = new StateFlush({ storage })
  writeFileSync(folder, "")
  for (const op of [() => flush.load("r-1"), () => flush.resume("r-1")]) {
    const err = await op().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(err).toMatchObject({ code: "ledger_storage_unavailable", cause: { code: "ENOTDIR" } })
    expect((err as Error).message).toBe(
      `state store ${path} unavailable during load (ENOTDIR): make it a readable, writable file, then retry`,
    )
  }
  await expect(
    storage.save({
      run_id: "r-1",
      status: "in-progress",
      state: {},
      updated_at: 1,
      reason: null,
      error: null,
    }),
  ).rejects.toMatchObject({ code: "ledger_storage_unavailable" })
})

// A Durable Object namespace over a memory store, whose object can be made unreachable: workerd then rejects every
// RPC with a plain Error, as `lost` here.
function durableObject() {
  const inner = new MemoryStateFlushStore()
  const lost = new Error("Network connection lost.")
  const ns = { down: false, lost }
  const rpc = <T>(fn: () => Promise<T>) => (ns.down ? Promise.reject(lost) : fn())
  const store = new DurableObjectStateFlushStore({
    idFromName: (n: string) => n,
    get: () => ({
      stateLoad: (id: string) => rpc(() => inner.load(id)),
      stateSave: (s: StateSnapshot) => rpc(() => inner.save(s)),
    }),
  })
  return { ns, store }
}

const rejection = async (p: () => unknown): Promise<unknown> => {
  try {
    await p()
  } catch (e) {
    return e
  }
  throw new Error("expected a rejection")
}

describe("a state store outage", () => {
  it("load, resume, checkpoint and flush reject with StateStoreUnavailableError, the driver's error its cause", async () => {
    const { ns, store } = durableObject()
    const flush = new StateFlush({ storage: store })
    ns.down = true
    const unavailable = (e: unknown, op: string) => {
      expect(e).toBeInstanceOf(StateStoreUnavailableError)
      expect(e).toBeInstanceOf(StateFlushError)
      expect(e).toMatchObject({ name: "StateStoreUnavailableError", code: "state_store_unavailable" })
      expect((e as Error).cause).toBe(ns.lost)
      expect((e as Error).message).toBe(
        `state store unavailable during ${op}: Error: Network connection lost.`,
      )
    }
    unavailable(await rejection(() => flush.load("r-1")), "load")
    unavailable(await rejection(() => flush.resume("r-1")), "load")
    const ending = await rejection(() =>
      flush.run("r-1", async (run) => {
        run.record({ page: 3 })
        unavailable(await rejection(() => run.checkpoint()), "save")
        unavailable(await rejection(() => run.flush("aborted", { reason: "manual" })), "save")
        return 1
      }),
    )
    // The run's ending keeps its own error, the driver's error as cause, as before saves were guarded.
    expect(ending).toBeInstanceOf(StateSnapshotUnstoredError)
    expect(ending).toMatchObject({ code: "state_snapshot_unstored", cause: ns.lost })
  })

  it("a store that throws at once: load() rejects, never throws, and a failed checkpoint or flush can be retried", async () => {
    const inner = new MemoryStateFlushStore()
    const refused = new TypeError("fetch failed")
    let down = true
    const storage = {
      load: (id: string) => {
        if (down) throw refused
        return inner.load(id)
      },
      save: (s: StateSnapshot) => {
        if (down) throw refused
        return inner.save(s)
      },
    }
    const flush = new StateFlush({ storage })
    const loading = flush.load("r-2")
    await expect(loading).rejects.toBeInstanceOf(StateStoreUnavailableError)
    await expect(loading).rejects.toMatchObject({ cause: refused })
    await flush.run("r-2", async (run) => {
      run.record({ page: 3 })
      await expect(run.checkpoint()).rejects.toMatchObject({
        code: "state_store_unavailable",
        cause: refused,
      })
      down = false
      await run.checkpoint()
      expect(await flush.resume("r-2")).toEqual({ page: 3 })
      down = true
      run.record({ page: 4 })
      await expect(run.flush("aborted", { reason: "manual" })).rejects.toBeInstanceOf(
        StateStoreUnavailableError,
      )
      down = false
      await run.flush("aborted", { reason: "manual" })
    })
    expect(await flush.load("r-2")).toMatchObject({ status: "aborted", reason: "manual", state: { page: 4 } })
  })

  it("a ledger error the store raises stays as it is: a corrupt file, an oversize snapshot", async () => {
    const path = tmpFile()
    writeFileSync(path, "{not json")
    const file = new StateFlush({ storage: new FileStateFlushStore(path) })
    for (const op of [() => file.load("r"), () => file.resume("r")]) {
      const err = await rejection(op)
      expect(err).toBeInstanceOf(LedgerFileCorruptError)
      expect(err).toMatchObject({ code: "ledger_file_corrupt" })
    }
    const { store } = durableObject()
    const big = new StateFlush({ storage: store })
    const err = await rejection(() =>
      big.run("big", async (run) => {
        run.record({ csv: "x".repeat(2_000_000) })
        const e = await rejection(() => run.checkpoint())
        expect(e).toBeInstanceOf(StateSnapshotTooLargeError)
        expect(e).toMatchObject({ code: "state_snapshot_too_large", runId: "big" })
      }),
    )
    expect(err).toMatchObject({ code: "state_snapshot_unstored" })
    expect((err as Error).cause).toBeInstanceOf(StateSnapshotTooLargeError)
  })
})

describe("options of the wrong kind are refused with InvalidOptionError naming the option", () => {
  const invalid = (e: unknown, option: string) => {
    expect(e).toBeInstanceOf(InvalidOptionError)
    expect(e).toBeInstanceOf(MyceliumError)
    expect(e).toMatchObject({ code: "invalid_option" })
    expect((e as Error).message).toContain(option)
  }

  it("StateFlush's: flushOn that is not a list, a storage without load/save, now or flushOnComplete", async () => {
    for (const flushOn of [5, "cancel", {}, true, ["cancel", Symbol("x")]])
      invalid(await rejection(() => new StateFlush({ flushOn: flushOn as never })), "flushOn")
    for (const storage of [{}, { load: () => null }, "memory", 5])
      invalid(await rejection(() => new StateFlush({ storage: storage as never })), "storage")
    invalid(await rejection(() => new StateFlush({ now: 5 as never })), "now")
    invalid(await rejection(() => new StateFlush({ flushOnComplete: "false" as never })), "flushOnComplete")
    for (const options of ["x", 5, []])
      invalid(await rejection(() => new StateFlush(options as never)), "options")
    // Null is unset, as each option's null always was.
    expect([...new StateFlush(null).flushOn]).toEqual(["cancel", "disconnect", "error"])
    expect([...new StateFlush({ flushOn: new Set(["error"]) as never }).flushOn]).toEqual(["error"])
  })

  it("run()'s: a signal or disconnectSignal that is no AbortSignal, a body that is no function; nothing runs or is stored", async () => {
    const storage = new MemoryStateFlushStore()
    const flush = new StateFlush({ storage })
    let ran = 0
    const body = () => void ran++
    const lookAlike = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {} }
    for (const name of ["signal", "disconnectSignal"])
      for (const bad of [{}, lookAlike, "yes", 1])
        invalid(await rejection(() => flush.run("r", body, { [name]: bad } as never)), name)
    invalid(await rejection(() => flush.run("r", "body" as never)), "body function")
    invalid(await rejection(() => flush.run("r", body, 5 as never)), "options")
    expect(ran).toBe(0)
    expect(await storage.load("r")).toBeNull()
    // Null is none: no options, no signal, no flush arguments.
    await flush.run("r", body, null)
    await flush.run("r2", body, { signal: null as never, disconnectSignal: undefined })
    await flush.run("r3", (run) => run.flush("aborted", null))
    expect(ran).toBe(2)
    expect(await flush.load("r3")).toMatchObject({ status: "aborted", reason: null })
  })

  it("run.flush() arguments that are not an object, and run ids that are not strings in load() and resume()", async () => {
    const flush = new StateFlush()
    await flush.run("r", async (run) => {
      invalid(await rejection(() => run.flush("aborted", "cancel" as never)), "run.flush() args")
      // Refused before it counted as the final snapshot: the run's own ending still writes.
      expect(run.flushed).toBe(false)
    })
    expect(await flush.load("r")).toMatchObject({ status: "completed" })
    for (const id of [5, "", null, {}]) {
      expect(await rejection(() => flush.load(id as never))).toMatchObject({ code: "state_flush_error" })
      expect(await rejection(() => flush.resume(id as never))).toMatchObject({ code: "state_flush_error" })
    }
  })
})
