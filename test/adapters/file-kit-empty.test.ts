// A truncated task or state-flush file (0 bytes, or only whitespace: a crash of some other tool mid-write, a
// `> file`) is corruption, as in the ledger file store: read as an empty store, the next claim wrote over it and
// every task it held ran again. A missing file is still an empty store.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileStateFlushStore } from "../../src/adapters/file-state.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { taskRecord } from "./file-kit-stall-rows.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-kit-empty-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const corrupt = { code: "ledger_file_corrupt" }
const snapshot = {
  run_id: "run-1",
  status: "in-progress",
  state: {},
  updated_at: 1,
  reason: null,
  error: null,
} as const

describe.each(["", "\n", " \t\n"])("a task or state file holding %j", (text) => {
  it("task store: every call refuses it and nothing is written", async () => {
    const dir = mkdtempSync(join(root, "t-"))
    const path = join(dir, "tasks.json")
    writeFileSync(path, text)
    const s = new FileTaskStore(path, { fsync: false })
    await expect(s.get("job:1")).rejects.toMatchObject(corrupt)
    await expect(s.swap("job:1", null, taskRecord("job:1", "w"))).rejects.toMatchObject(corrupt)
    await expect(
      (async () => {
        for await (const _ of s.list());
      })(),
    ).rejects.toMatchObject(corrupt)
    expect(readFileSync(path, "utf8")).toBe(text)
    expect(existsSync(`${path}.leases.json`)).toBe(false)
  })

  it("task store: a truncated lease sidecar is refused too", async () => {
    const path = join(mkdtempSync(join(root, "l-")), "tasks.json")
    writeFileSync(`${path}.leases.json`, text)
    const s = new FileTaskStore(path, { fsync: false })
    await expect(s.swap("job:1", null, taskRecord("job:1", "w"))).rejects.toMatchObject(corrupt)
    expect(readFileSync(`${path}.leases.json`, "utf8")).toBe(text)
  })

  it("state-flush store: load and save refuse it and nothing is written", async () => {
    const path = join(mkdtempSync(join(root, "s-")), "state.json")
    writeFileSync(path, text)
    const s = new FileStateFlushStore(path, { fsync: false })
    await expect(s.load("run-1")).rejects.toMatchObject(corrupt)
    await expect(s.save(snapshot)).rejects.toMatchObject(corrupt)
    expect(readFileSync(path, "utf8")).toBe(text)
  })
})

describe("a missing task or state file", () => {
  it("is an empty store, created by the first write", async () => {
    const dir = mkdtempSync(join(root, "m-"))
    const tasks = new FileTaskStore(join(dir, "tasks.json"), { fsync: false })
    expect(await tasks.get("job:1")).toBeNull()
    expect(await tasks.swap("job:1", null, taskRecord("job:1", "w"))).not.toBeNull()
    const state = new FileStateFlushStore(join(dir, "state.json"), { fsync: false })
    expect(await state.load("run-1")).toBeNull()
    await state.save(snapshot)
    expect((await state.load("run-1"))?.run_id).toBe("run-1")
  })
})
