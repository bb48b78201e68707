// Fixed defect: a command whose cwd marker was read back while stop() ran wrote the shell state back into the
// stopped workspace. `state` still answered, start() returned early (it skips when `#state` is set), no new root was
// made, and every later action failed. In use: a command finishing while the host stops the workspace (a cancelled
// run, a withWorkspace that ends on an error), then a restart of the same workspace.
// The interleaving is forced by holding the marker read until stop() (and start()) have finished.
import { describe, expect, it, vi } from "vitest"
import { CmdRunAction, WorkspaceNotStartedError } from "../../src/harness/workspace/index.ts"
import { afterTest, observed, startedWorkspace } from "./started-workspace.ts"

const hook: { afterMarkerOpen: ((path: string) => Promise<void>) | null } = { afterMarkerOpen: null }

// The workspace reads a command's cwd marker (`<private dir>/cwd-<n>`) through fs.promises.open (safe-fs.ts).
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>()
  const open = (async (...args: Parameters<typeof real.open>) => {
    const fh = await real.open(...args)
    if (!/\/cwd-\d+$/.test(String(args[0]))) return fh
    const h = hook.afterMarkerOpen
    hook.afterMarkerOpen = null
    await h?.(String(args[0]))
    return fh
  }) as typeof real.open
  return { ...real, default: { ...real, open }, open }
})

describe("stop() while a command's cwd marker is being read", () => {
  it("leaves the workspace stopped, and a later start() gives a working workspace", async () => {
    const w = await startedWorkspace()
    afterTest(() => {
      hook.afterMarkerOpen = null
    })
    hook.afterMarkerOpen = () => w.stop()
    // The command ran to its end: its observation says so.
    expect(observed(await w.act(CmdRunAction({ command: "echo done" })), "cmd_output")).toMatchObject({
      exit_code: 0,
      stdout: "done\n",
    })
    // Stopped: the state is gone.
    expect(() => w.state).toThrow(WorkspaceNotStartedError)
    // Restarted: a fresh root, and commands run again.
    await w.start()
    expect(typeof w.root).toBe("string")
    expect(await w.act(CmdRunAction({ command: "echo back" }))).toMatchObject({
      kind: "cmd_output",
      stdout: "back\n",
    })
  })

  it("a restart in the meantime keeps the new session's cwd, not the old command's", async () => {
    const w = await startedWorkspace()
    afterTest(() => {
      hook.afterMarkerOpen = null
    })
    hook.afterMarkerOpen = async () => {
      await w.stop()
      await w.start()
    }
    await w.act(CmdRunAction({ command: "mkdir d && cd d" }))
    expect(w.state.cwd).toBe(w.root)
    expect(await w.act(CmdRunAction({ command: "pwd" }))).toMatchObject({
      kind: "cmd_output",
      stdout: `${w.root}\n`,
    })
  })
})
