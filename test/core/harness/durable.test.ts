// Durable runs: a plan killed midway (real child process, SIGKILL) and resumed with the same run id on the file
// store re-runs only the unfinished work. Finished tasks replay from the ledger, finished requests are not paid for
// again, and a side-effecting tool never runs twice.
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import type { RunResult } from "../../../src/harness/index.ts"
import { childBundles } from "../../child-bundle.ts"

const bundled = childBundles()

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function child(args: string[]): {
  proc: ReturnType<typeof spawn>
  out: Promise<string>
  ready: Promise<void>
} {
  const proc = spawn(process.execPath, [bundled("test/core/harness/durable-child.ts"), ...args])
  let stdout = ""
  let stderr = ""
  let onReady: () => void = () => {}
  const ready = new Promise<void>((r) => {
    onReady = r
  })
  proc.stdout.on("data", (d: Buffer) => {
    stdout += d.toString()
    if (stdout.includes("READY")) onReady()
  })
  proc.stderr.on("data", (d: Buffer) => {
    stderr += d.toString()
  })
  // "close", not "exit": a child's pipes may still hold output when it exits.
  const out = new Promise<string>((resolve, reject) =>
    proc.on("close", (code, signal) =>
      code === 0 || signal === "SIGKILL"
        ? resolve(stdout)
        : reject(new Error(`child exited ${code}: ${stderr}`)),
    ),
  )
  return { proc, out, ready }
}

const lines = (log: string) => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [])

describe("durable runs", () => {
  it("SIGKILL mid-plan, then resume with the same run id: only unfinished work runs again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harness-durable-"))
    dirs.push(dir)
    const file = join(dir, "ledger.json")
    const log = join(dir, "effects.log")
    const runId = `run:${"ab".repeat(16)}`

    const crashing = child([file, runId, log, "crash"])
    await crashing.ready
    crashing.proc.kill("SIGKILL")
    await crashing.out
    const before = lines(log)
    // A and B finished (2 requests and 1 tool each); C ran its tool and hung in its second request.
    expect(before.filter((l) => l.startsWith("model")).sort()).toEqual(
      ["model A 0", "model A 1", "model B 0", "model B 1", "model C 0", "model C 1"].sort(),
    )
    expect(before.filter((l) => l.startsWith("tool")).sort()).toEqual(["tool A", "tool B", "tool C"])

    const resumed = child([file, runId, log, "resume"])
    const result = JSON.parse((await resumed.out).trim().split("\n").at(-1) as string) as RunResult
    const after = lines(log).slice(before.length)
    // Resume paid for C's unfinished request and D's two, nothing else; only D's tool executed.
    expect(after).toEqual(["model C 1", "model D 0", "tool D", "model D 1"])
    expect(result.status).toBe("succeeded")
    expect(result.run_id).toBe(runId)
    expect(result.output).toBe("D done after charged D")
    const byId = Object.fromEntries(result.tasks.map((t) => [t.task_id, t]))
    expect(byId.A?.replayed).toBe(true)
    expect(byId.B?.replayed).toBe(true)
    expect(byId.C?.replayed).toBeUndefined()
    expect(byId.C?.output).toBe("C done after charged C") // C's tool result came back from the ledger
    expect(result.model_requests_total).toBe(3) // samples are this process's real requests only
    // Usage covers the whole run: 4 tasks x 2 requests, 4 tool calls, across both processes.
    expect(result.usage).toMatchObject({ requests: 8, tool_calls: 4, input_tokens: 120, output_tokens: 28 })

    // A third run of the same id replays everything: no model request, no tool.
    const again = child([file, runId, log, "resume"])
    const third = JSON.parse((await again.out).trim().split("\n").at(-1) as string) as RunResult
    expect(lines(log).length).toBe(before.length + after.length)
    expect(third.output).toBe(result.output)
    expect(third.tasks.every((t) => t.replayed)).toBe(true)
    expect(third.usage).toMatchObject({ requests: 8, tool_calls: 4 })
  }, 60_000)

  it("a side-effecting tool killed mid-call is refused on resume, never run twice", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harness-durable-"))
    dirs.push(dir)
    const file = join(dir, "ledger.json")
    const log = join(dir, "effects.log")
    const runId = `run:${"cd".repeat(16)}`
    const crashing = child([file, runId, log, "crash-in-tool"])
    await crashing.ready
    crashing.proc.kill("SIGKILL")
    await crashing.out
    expect(lines(log).filter((l) => l === "tool C")).toHaveLength(1)

    const resumed = child([file, runId, log, "resume"])
    const result = JSON.parse((await resumed.out).trim().split("\n").at(-1) as string) as RunResult
    // The ledger cannot know whether the charge happened: it refuses to repeat it, and the run fails closed.
    expect(result.status).toBe("failed")
    expect(result.failure).toMatchObject({
      reason: "task_failed",
      task_id: "C",
      error_type: "LedgerHardBlockError",
    })
    expect(lines(log).filter((l) => l === "tool C")).toHaveLength(1)
    expect(lines(log).some((l) => l.includes(" D "))).toBe(false)
    expect(result.output).toBeNull()
  }, 60_000)
})
