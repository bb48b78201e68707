// The workspace's start/stop lifecycle: concurrent first actions share one start, a stopped workspace refuses
// actions without throwing or leaking a host path, and no temp directory is left behind.
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import {
  CmdRunAction,
  createWorkspace,
  FileWriteAction,
  WorkspaceNotStartedError,
} from "../../src/harness/workspace/index.ts"

// os.tmpdir() reads TMPDIR on each call: a private one makes every directory the workspace creates countable.
let tmp: string
const saved = process.env.TMPDIR
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "ws-lifecycle-"))
  process.env.TMPDIR = tmp
})
afterEach(() => {
  if (saved === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = saved
  rmSync(tmp, { recursive: true, force: true })
})

describe("workspace lifecycle", () => {
  it("parallel first actions start one workspace, and stop() leaves no temp directory behind", async () => {
    const w = createWorkspace()
    const obs = await Promise.all(
      [1, 2, 3].map((i) => w.act(FileWriteAction({ path: `f${i}.txt`, content: "x" }))),
    )
    expect(obs.map((o) => o.kind)).toEqual(["file_write_ok", "file_write_ok", "file_write_ok"])
    expect(readdirSync(tmp)).toHaveLength(2) // the root and the private state dir
    expect(readdirSync(w.root).sort()).toEqual(["f1.txt", "f2.txt", "f3.txt"])
    await Promise.all([w.start(), w.start()])
    await w.stop()
    expect(readdirSync(tmp)).toEqual([])
  })

  it("act() after stop() is refused as an error observation with no host path, and creates nothing", async () => {
    const w = createWorkspace()
    await w.start()
    await w.stop()
    const o = await w.act(CmdRunAction({ command: "echo hi" }))
    expect(o).toMatchObject({ kind: "error", action_kind: "cmd_run", step: 1 })
    expect((o as { message: string }).message).not.toContain(tmp)
    expect(readdirSync(tmp)).toEqual([])
    // An explicit start() brings it back, on a fresh root.
    await w.start()
    expect(await w.act(CmdRunAction({ command: "echo hi" }))).toMatchObject({
      kind: "cmd_output",
      stdout: "hi\n",
    })
    await w.stop()
    expect(readdirSync(tmp)).toEqual([])
  })

  it("a start() failure inside act() is reported, not thrown", async () => {
    const w = createWorkspace({ root: join(tmp, "missing") })
    const o = await w.act(CmdRunAction({ command: "true" }))
    expect(o).toMatchObject({ kind: "error", message: "workspace action failed" })
  })

  it("the not-started error says how to start it", () => {
    const e = (() => {
      try {
        return createWorkspace().root
      } catch (err) {
        return err
      }
    })()
    expect(e).toBeInstanceOf(WorkspaceNotStartedError)
    expect((e as Error).message).toContain("start()")
    expect((e as Error).message).not.toContain("createWorkspace() and")
  })
})
