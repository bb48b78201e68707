// The workspace shell: a command's own exit status whatever it ends with, background jobs that do not hold act()
// open, and timeouts that are honoured when long and refused when invalid.
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import {
  CmdRunAction,
  type DevWorkspace,
  TestRunAction,
  type WorkspaceObservation,
  withWorkspace,
} from "../../src/harness/workspace/index.ts"
import { afterTest, alive, observed, sleep, startedWorkspace } from "./started-workspace.ts"

const cmdOutput = (o: WorkspaceObservation) => observed(o, "cmd_output")

/** Starts `sleep` in the background and returns its pid, killed after the test whatever happens. */
async function backgroundSleep(w: DevWorkspace): Promise<number> {
  const o = cmdOutput(await w.act(CmdRunAction({ command: "sleep 4242 & echo $!", timeout: 5 })))
  const pid = Number(o.stdout.trim())
  expect(pid).toBeGreaterThan(0)
  afterTest(() => {
    try {
      process.kill(pid, "SIGKILL")
    } catch {}
  })
  return pid
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 40 && alive(pid); i++) await sleep(50)
  return !alive(pid)
}

describe("the command's exit status", () => {
  it("is bash's own, even when the command ends with a backslash, && or an open quote", async () => {
    const w = await startedWorkspace()
    for (const command of ["false \\", "false &&", "exit 3 \\", 'echo "open', "mkdir d && cd d \\"]) {
      const expected = spawnSync("bash", ["-c", command], { cwd: w.root }).status
      expect(expected).not.toBe(0)
      const o = cmdOutput(await w.act(CmdRunAction({ command })))
      expect({ command, exit: o.exit_code }).toEqual({ command, exit: expected })
    }
  })

  it("keeps cd persisting, exit keeping the old cwd, heredocs, and no wrapper variable in the environment", async () => {
    const w = await startedWorkspace()
    expect(cmdOutput(await w.act(CmdRunAction({ command: "mkdir -p pkg && cd pkg" }))).cwd).toBe(
      join(w.root, "pkg"),
    )
    const exited = cmdOutput(await w.act(CmdRunAction({ command: "cd / && exit 4" })))
    expect([exited.exit_code, exited.cwd]).toEqual([4, join(w.root, "pkg")])
    const heredoc = cmdOutput(await w.act(CmdRunAction({ command: "cat <<'EOF'\na \\\nb\nEOF" })))
    expect([heredoc.exit_code, heredoc.stdout]).toEqual([0, "a \\\nb\n"])
    const env = cmdOutput(await w.act(CmdRunAction({ command: "env | grep -ci mycelium_cmd" })))
    expect(env.stdout.trim()).toBe("0")
  })

  it("a remembered cwd with a quote in its name stays the start directory, and its name never runs as code", async () => {
    const w = await startedWorkspace()
    for (const dir of ["it's", "x'; touch pwned; '"]) {
      const made = cmdOutput(
        await w.act(CmdRunAction({ command: `mkdir -p "${dir}" && cd "${dir}"`, cwd: w.root })),
      )
      expect(made.cwd).toBe(join(w.root, dir))
      const o = cmdOutput(await w.act(CmdRunAction({ command: "pwd" })))
      expect([o.exit_code, o.stdout]).toEqual([0, `${join(w.root, dir)}\n`])
    }
    expect(existsSync(join(w.root, "pwned"))).toBe(false)
  })
})

describe("background jobs and timeouts", () => {
  it("act() returns when the shell exits, with its output, while a background job still holds the pipes", async () => {
    const w = await startedWorkspace()
    const t0 = Date.now()
    const o = cmdOutput(await w.act(CmdRunAction({ command: "sleep 30 & echo started", timeout: 20 })))
    expect([o.exit_code, o.stdout]).toEqual([0, "started\n"])
    // Waiting for the job's pipes or for the timeout takes 30 s or 20 s: the bound is wide so a loaded machine's slow
    // spawn cannot fail it.
    expect(Date.now() - t0).toBeLessThan(10_000)
  })

  it("a background job runs until stop(), which kills it", async () => {
    const w = await startedWorkspace()
    const pid = await backgroundSleep(w)
    cmdOutput(await w.act(CmdRunAction({ command: "true" })))
    expect(alive(pid)).toBe(true)
    await w.stop()
    expect(await gone(pid)).toBe(true)
  })

  it("stop() also ends a command still running, and its act() then returns", async () => {
    const w = await startedWorkspace()
    const running = w.act(CmdRunAction({ command: "sleep 4242 & echo $! > pid; wait", timeout: 60 }))
    const file = join(w.root, "pid")
    const read = () => (existsSync(file) ? Number(readFileSync(file, "utf8")) : 0)
    for (let i = 0; i < 100 && !(read() > 0); i++) await sleep(20)
    const pid = read()
    expect(pid).toBeGreaterThan(0) // never kill(0): that is the test's own process group
    afterTest(() => {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    })
    const t0 = Date.now()
    await w.stop()
    expect(await gone(pid)).toBe(true)
    await running
    // Not the command's 60 s timeout; wide, so a loaded machine cannot fail it.
    expect(Date.now() - t0).toBeLessThan(10_000)
  })

  it("withWorkspace() kills the background jobs when it ends, also when fn throws", async () => {
    let pid = 0
    await withWorkspace({}, async (w) => {
      pid = await backgroundSleep(w)
    })
    expect(await gone(pid)).toBe(true)
    await expect(
      withWorkspace({}, async (w) => {
        pid = await backgroundSleep(w)
        throw new Error("boom")
      }),
    ).rejects.toThrow("boom")
    expect(await gone(pid)).toBe(true)
  })

  it("a background job that writes after the command returned keeps running (its output is drained)", async () => {
    const w = await startedWorkspace()
    const o = cmdOutput(
      await w.act(CmdRunAction({ command: "(sleep 0.3; echo late; echo late >&2; touch done) & echo now" })),
    )
    expect(o.stdout).toBe("now\n")
    // Waited for, not slept on: a loaded machine can take longer than a fixed second to run the job's last steps. A
    // job killed by its writes never makes the file.
    const done = join(w.root, "done")
    for (let i = 0; i < 200 && !existsSync(done); i++) await sleep(50)
    expect(existsSync(done)).toBe(true)
  })

  it("a timeout returns 124 on time even when a setsid child outside the group holds the pipes", async () => {
    const w = await startedWorkspace()
    const t0 = Date.now()
    const o = cmdOutput(
      await w.act(CmdRunAction({ command: "setsid sleep 30 & echo $! > pid; sleep 20", timeout: 0.5 })),
    )
    const pid = Number(readFileSync(join(w.root, "pid"), "utf8"))
    afterTest(() => {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    })
    expect(o.exit_code).toBe(124)
    // Not when the pipes close (30 s) nor when the command ends (20 s); wide, so a loaded machine cannot fail it.
    expect(Date.now() - t0).toBeLessThan(10_000)
  })

  it("a timeout beyond setTimeout's 24.8-day range is honoured, not fired at once", async () => {
    const w = await startedWorkspace()
    const o = cmdOutput(await w.act(CmdRunAction({ command: "sleep 0.2; echo hi", timeout: 3_000_000 })))
    expect([o.exit_code, o.stdout]).toEqual([0, "hi\n"])
  })

  it("an invalid timeout is refused before the command starts, as an error observation", async () => {
    const w = await startedWorkspace()
    for (const timeout of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, "5" as unknown as number]) {
      const o = await w.act(CmdRunAction({ command: "touch ran", timeout }))
      expect(o).toMatchObject({ kind: "error", action_kind: "cmd_run" })
      expect((o as { message: string }).message).toContain("timeout must be")
    }
    expect(
      await w.act(TestRunAction({ framework: "custom", selector: "touch ran", timeout: 0 })),
    ).toMatchObject({
      kind: "error",
      action_kind: "test_run",
    })
    expect(existsSync(join(w.root, "ran"))).toBe(false)
  })
})
