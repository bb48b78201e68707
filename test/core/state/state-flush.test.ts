import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import { testStateFlush } from "../../../src/conformance.ts"
import { LedgerStorageUnavailableError } from "../../../src/core/ledger/index.ts"
import { StateFlush, StateFlushError } from "../../../src/state.ts"
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
