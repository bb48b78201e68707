// A batch of parallel tool calls runs workspace actions at the same time (up to max_parallel_tool_calls at once).
// Fixed defects: every command wrote its cwd to one shared marker file, so a command read back another's cwd (or none);
// two edits of one file each read it before the other wrote it back, so one edit was lost while both reported
// applied; a read while the file was rewritten saw it truncated.
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it, vi } from "vitest"
import {
  CmdRunAction,
  FileEditAction,
  FileReadAction,
  FileWriteAction,
} from "../../src/harness/workspace/index.ts"
import { tempDirs } from "../temp-dirs.ts"
import { afterTest, observed, startedWorkspace } from "./started-workspace.ts"

const hook: { beforeMarkerRead: (() => Promise<void>) | null; beforeOpen: (() => Promise<void>) | null } = {
  beforeMarkerRead: null,
  beforeOpen: null,
}
const tempDir = tempDirs("mycelium-ws-parallel-")

// The workspace reads a command's cwd marker (`<private dir>/cwd-<n>`) and file actions their file through
// fs.promises.open (safe-fs.ts); each kind has its own hook, run before the open.
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>()
  const open = (async (...args: Parameters<typeof real.open>) => {
    const which = /\/cwd-\d+$/.test(String(args[0])) ? "beforeMarkerRead" : "beforeOpen"
    const h = hook[which]
    hook[which] = null
    await h?.()
    return await real.open(...args)
  }) as typeof real.open
  return { ...real, default: { ...real, open }, open }
})

describe("commands running at the same time", () => {
  it("each reads back its own cwd, not the one another command wrote meanwhile", async () => {
    const w = await startedWorkspace()
    afterTest(() => {
      hook.beforeMarkerRead = null
    })
    // `a` has ended in sub; before its cwd is read back, `b` runs from start to end in the root.
    let b: Awaited<ReturnType<typeof w.act>> | undefined
    hook.beforeMarkerRead = async () => {
      b = await w.act(CmdRunAction({ command: "true" }))
    }
    const a = await w.act(CmdRunAction({ command: "mkdir sub && cd sub" }))
    expect(observed(b as NonNullable<typeof b>, "cmd_output").cwd).toBe(w.root)
    expect(observed(a, "cmd_output").cwd).toBe(`${w.root}/sub`)
    expect(w.state.cwd).toBe(`${w.root}/sub`)
  })

  it("a command that exits keeps the old cwd even when another wrote its cwd meanwhile", async () => {
    const w = await startedWorkspace()
    afterTest(() => {
      hook.beforeMarkerRead = null
    })
    hook.beforeMarkerRead = async () => {
      await w.act(CmdRunAction({ command: "mkdir other && cd other" }))
    }
    const a = await w.act(CmdRunAction({ command: "cd / && exit 3" }))
    expect(observed(a, "cmd_output")).toMatchObject({ exit_code: 3, cwd: w.root })
  })
})

describe("file actions running at the same time", () => {
  it("two edits of one file both land", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "app.py", content: "a = 1\nb = 2\n" }))
    const [x, y] = await Promise.all([
      w.act(FileEditAction({ path: "app.py", old: "a = 1", new: "a = 10" })),
      w.act(FileEditAction({ path: "app.py", old: "b = 2", new: "b = 20" })),
    ])
    expect(observed(x, "file_edit_ok").applied).toBe(true)
    expect(observed(y, "file_edit_ok").applied).toBe(true)
    expect(observed(await w.act(FileReadAction({ path: "app.py" })), "file_content").content).toBe(
      "a = 10\nb = 20\n",
    )
  })

  it("a read while the file is rewritten sees the old content or the new, never a truncated file", async () => {
    const w = await startedWorkspace()
    const n = 1024 * 1024
    await w.act(FileWriteAction({ path: "big.txt", content: "x".repeat(n) }))
    const lengths = new Set<number>()
    for (let i = 0; i < 10; i++) {
      const [, r] = await Promise.all([
        w.act(FileWriteAction({ path: "big.txt", content: (i % 2 ? "x" : "y").repeat(n) })),
        w.act(FileReadAction({ path: "big.txt" })),
      ])
      lengths.add(observed(r, "file_content").content.length)
    }
    expect([...lengths]).toEqual([n])
  })

  it("one whose signal aborts while it waits its turn does not run", async () => {
    const w = await startedWorkspace()
    const ac = new AbortController()
    const first = w.act(FileWriteAction({ path: "a.txt", content: "a".repeat(1024 * 1024) }))
    const queued = w.act(FileWriteAction({ path: "b.txt", content: "b" }), { signal: ac.signal })
    ac.abort()
    expect(observed(await first, "file_write_ok").bytes_written).toBe(1024 * 1024)
    expect(observed(await queued, "error").message).toBe("the action was cancelled before it ran")
    expect(observed(await w.act(FileReadAction({ path: "b.txt" })), "error").message).toMatch(/no such file/)
  })
})

describe("file actions waiting their turn", () => {
  it("one whose signal aborts while an earlier one runs does not run", async () => {
    const w = await startedWorkspace()
    afterTest(() => {
      hook.beforeOpen = null
    })
    await w.act(FileWriteAction({ path: "a.txt", content: "a" }))
    const ac = new AbortController()
    // Aborted once the queued write has reached its place in line, while the read ahead of it opens its file.
    hook.beforeOpen = async () => ac.abort()
    const [read, queued] = await Promise.all([
      w.act(FileReadAction({ path: "a.txt" })),
      w.act(FileWriteAction({ path: "b.txt", content: "b" }), { signal: ac.signal }),
    ])
    expect(ac.signal.aborted).toBe(true)
    expect(observed(read, "file_content").content).toBe("a")
    expect(observed(queued, "error").message).toBe("the action was cancelled before it ran")
    expect(existsSync(join(w.root, "b.txt"))).toBe(false)
  })

  it("one still waiting when the workspace stops does not run after the stop", async () => {
    // A root of the caller's, which stop() keeps: a write that ran after the stop would land in it.
    const root = tempDir()
    writeFileSync(join(root, "a.txt"), "a")
    const w = await startedWorkspace({ root })
    afterTest(() => {
      hook.beforeOpen = null
    })
    // The read ahead of the write stops the workspace (a host ending the run) before it opens its file.
    hook.beforeOpen = () => w.stop()
    const [, queued] = await Promise.all([
      w.act(FileReadAction({ path: "a.txt" })),
      w.act(FileWriteAction({ path: "b.txt", content: "b" })),
    ])
    expect(observed(queued, "error").message).toBe("the workspace stopped before the action ran")
    expect(existsSync(join(root, "b.txt"))).toBe(false)
  })
})
