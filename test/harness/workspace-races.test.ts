// stop() and start() and a command's write-back, interleaved (the review of 77105be): a setEnv() during a command
// was undone by its write-back, and a start() during a stop() resolved to a workspace with no root.
import { describe, expect, it } from "vitest"
import { CmdRunAction, createWorkspace } from "../../src/harness/workspace/index.ts"
import { afterTest, startedWorkspace } from "./started-workspace.ts"

describe("write-back after a command", () => {
  it("setEnv() while a command runs is not undone when the command finishes", async () => {
    const w = await startedWorkspace()
    const running = w.act(CmdRunAction({ command: "sleep 0.3" }))
    await new Promise((r) => setTimeout(r, 100))
    w.setEnv("TOKEN", "abc")
    expect(w.state.env.TOKEN).toBe("abc")
    await running
    // The command's write-back replaced the state with the env it started with: TOKEN is gone.
    expect(w.state.env.TOKEN).toBe("abc")
  })
})

describe("stop() racing start()", () => {
  it("start() called while stop() is under way resolves to a started workspace", async () => {
    const w = createWorkspace()
    await w.start()
    afterTest(() => w.stop())
    const stopping = w.stop()
    // stop() has set #stopped but not yet cleared #state (it awaits before that): start() sees #state and returns
    // at once; stop() then clears it. start() resolved, yet the workspace has no root.
    await w.start()
    await stopping
    expect(() => w.root).not.toThrow()
  })

  it("a stop() after a start() that waits for an earlier stop() wins: the workspace ends stopped", async () => {
    const w = createWorkspace()
    await w.start()
    afterTest(() => w.stop())
    await Promise.all([w.stop(), w.start(), w.stop()])
    expect(() => w.root).toThrow()
    await w.start()
    expect(() => w.root).not.toThrow()
  })
})

describe("start() not awaited", () => {
  it("an act() right after an unawaited start() of a stopped workspace runs", async () => {
    const w = createWorkspace()
    await w.start()
    afterTest(() => w.stop())
    await w.stop()
    void w.start()
    const obs = await w.act(CmdRunAction({ command: "echo hi" }))
    expect(obs).toMatchObject({ kind: "cmd_output", stdout: "hi\n" })
  })
})
