// A command cancelled before its spawn (during start or the policy gate) never runs, and reports
// what a command killed right after its spawn reports: exit code 128.
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { RunFailed, runPlan, ScriptedModel } from "../../src/core/harness/index.ts"
import {
  CmdRunAction,
  FileEditAction,
  FileWriteAction,
  workspaceTools,
} from "../../src/harness/workspace/index.ts"
import { observed, startedWorkspace } from "./started-workspace.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
// A gate that answers slowly, like a remote policy service.
const slowGate = async () => {
  await sleep(50)
  return true
}

describe("a cancelled cmd_run", () => {
  it("does not run when the signal aborts while the policy gate is deciding", async () => {
    const w = await startedWorkspace({ policyGate: slowGate })
    const ac = new AbortController()
    setTimeout(() => ac.abort(new Error("cancelled")), 10)
    const o = await w.act(CmdRunAction({ command: "echo charged > effect.txt" }), { signal: ac.signal })
    expect(observed(o, "cmd_output").exit_code).toBe(128)
    await sleep(100)
    expect(existsSync(join(w.root, "effect.txt"))).toBe(false)
  })

  it("does not run when the signal was aborted before act(), and a kill after the spawn reports the same", async () => {
    const w = await startedWorkspace()
    const o = await w.act(CmdRunAction({ command: "echo charged > effect.txt" }), {
      signal: AbortSignal.abort(),
    })
    expect(observed(o, "cmd_output")).toMatchObject({ exit_code: 128, stdout: "", stderr: "" })
    expect(existsSync(join(w.root, "effect.txt"))).toBe(false)
    const late = await w.act(CmdRunAction({ command: "sleep 5" }), { signal: AbortSignal.timeout(100) })
    expect(observed(late, "cmd_output").exit_code).toBe(128)
  })

  it("through runPlan: cancelling the run during the gate stops the command from running", async () => {
    const w = await startedWorkspace({ policyGate: slowGate })
    const model = new ScriptedModel({
      byTask: {
        t: [
          { tool_calls: [{ name: "cmd_run", args: { command: "echo paid > effect.txt" } }] },
          { text: "ok" },
        ],
      },
    })
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 20)
    const err = await runPlan(
      { tasks: [{ task_id: "t", prompt: "p" }], output_task_id: "t" },
      { model, tools: workspaceTools(w) },
      { signal: ac.signal },
    ).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RunFailed)
    expect((err as RunFailed).result.reason).toBe("cancelled")
    await sleep(100)
    expect(existsSync(join(w.root, "effect.txt"))).toBe(false)
  })
})

describe("a cancelled file action", () => {
  it("does not write or edit when the signal aborts while the policy gate is deciding", async () => {
    const w = await startedWorkspace({ policyGate: slowGate })
    await w.act(FileWriteAction({ path: "kept.txt", content: "old" }))
    const ac = new AbortController()
    setTimeout(() => ac.abort(new Error("cancelled")), 10)
    const [write, edit] = await Promise.all([
      w.act(FileWriteAction({ path: "effect.txt", content: "charged" }), { signal: ac.signal }),
      w.act(FileEditAction({ path: "kept.txt", old: "old", new: "new" }), { signal: ac.signal }),
    ])
    expect(observed(write, "error").message).toBe("the action was cancelled before it ran")
    expect(observed(edit, "error").message).toBe("the action was cancelled before it ran")
    expect(existsSync(join(w.root, "effect.txt"))).toBe(false)
    expect(readFileSync(join(w.root, "kept.txt"), "utf8")).toBe("old")
  })
})
