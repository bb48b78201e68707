import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, it } from "vitest"
import { FileStateFlushStore } from "../../../src/adapters/file-state.ts"
import { testStateFlush } from "../../../src/conformance.ts"
import { StateFlush, StateFlushError } from "../../../src/state.ts"

const tmpFile = () => join(mkdtempSync(join(tmpdir(), "mycelium-state-")), "state.json")

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
