// WS-01..12: the developer workspace on the real filesystem and a real bash.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import {
  AgentFinishAction,
  CmdRunAction,
  createWorkspace,
  FileEditAction,
  FileReadAction,
  FileWriteAction,
  MUTATING_POLICY_NAMES,
  PortExposeAction,
  parseAction,
  parseObservation,
  parseTestSummary,
  TestRunAction,
  type WorkspaceAction,
  WorkspaceEventParseError,
  WorkspaceNotStartedError,
  withWorkspace,
} from "../../src/harness/workspace/index.ts"
import { afterTest, observed, startedWorkspace } from "./started-workspace.ts"

describe("workspace", () => {
  it("WS-01: the cwd persists after mkdir -p pkg && cd pkg; a command that exits keeps the old cwd", async () => {
    const w = await startedWorkspace()
    const first = observed(await w.act(CmdRunAction({ command: "mkdir -p pkg && cd pkg" })), "cmd_output")
    expect(first.exit_code).toBe(0)
    expect(first.cwd).toBe(join(w.root, "pkg"))
    expect(observed(await w.act(CmdRunAction({ command: "pwd" })), "cmd_output").stdout.trim()).toBe(
      join(w.root, "pkg"),
    )
    const exited = observed(await w.act(CmdRunAction({ command: "cd / && exit 3" })), "cmd_output")
    expect(exited.exit_code).toBe(3)
    expect(w.state.cwd).toBe(join(w.root, "pkg"))
    // An explicit cwd applies to that command (and the shell ends there).
    const explicit = observed(await w.act(CmdRunAction({ command: "pwd", cwd: w.root })), "cmd_output")
    expect(explicit.stdout.trim()).toBe(w.root)
    expect(existsSync(join(w.root, ".au_workspace_cwd"))).toBe(false) // the marker stays out of the workspace
  })

  it("WS-02: env is applied", async () => {
    const w = await startedWorkspace({ env: { GREETING: "hello" } })
    w.setEnv("TARGET", "world")
    const o = observed(await w.act(CmdRunAction({ command: 'echo "$GREETING $TARGET"' })), "cmd_output")
    expect(o.stdout).toBe("hello world\n")
  })

  it("WS-03: write -> read -> edit, with a unified diff and modes 0600/0700", async () => {
    const w = await startedWorkspace()
    const wrote = observed(
      await w.act(FileWriteAction({ path: "src/app.py", content: "x = 1\ny = 2\nπ = 3\n" })),
      "file_write_ok",
    )
    expect(wrote.bytes_written).toBe(Buffer.byteLength("x = 1\ny = 2\nπ = 3\n"))
    expect(readFileSync(join(w.root, "src/app.py"), "utf8")).toBe("x = 1\ny = 2\nπ = 3\n")
    const { statSync } = await import("node:fs")
    expect(statSync(join(w.root, "src/app.py")).mode & 0o777).toBe(0o600)
    expect(statSync(join(w.root, "src")).mode & 0o777).toBe(0o700)
    expect(observed(await w.act(FileReadAction({ path: "src/app.py" })), "file_content").content).toBe(
      "x = 1\ny = 2\nπ = 3\n",
    )
    const edit = observed(
      await w.act(FileEditAction({ path: "src/app.py", old: "y = 2", new: "y = 20" })),
      "file_edit_ok",
    )
    expect(edit.replacements).toBe(1)
    expect(edit.diff).toContain("--- a/src/app.py")
    expect(edit.diff).toContain("+++ b/src/app.py")
    expect(edit.diff).toContain("-y = 2\n+y = 20")
    expect(readFileSync(join(w.root, "src/app.py"), "utf8")).toBe("x = 1\ny = 20\nπ = 3\n")
  })

  it("WS-04: a symlinked parent is refused and nothing is written outside", async () => {
    const outside = mkdtempSync(join(tmpdir(), "ws-outside-"))
    afterTest(() => rmSync(outside, { recursive: true, force: true }))
    const w = await startedWorkspace()
    symlinkSync(outside, join(w.root, "escape"))
    const o = observed(await w.act(FileWriteAction({ path: "escape/pwned.txt", content: "x" })), "error")
    expect(o.message).toContain("symlink")
    expect(existsSync(join(outside, "pwned.txt"))).toBe(false)
    // A symlinked file is refused too, for read and write.
    writeFileSync(join(outside, "secret"), "s3cret")
    symlinkSync(join(outside, "secret"), join(w.root, "link"))
    expect(observed(await w.act(FileReadAction({ path: "link" })), "error").message).toContain("symlink")
    observed(await w.act(FileWriteAction({ path: "link", content: "overwrite" })), "error")
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("s3cret")
    for (const path of ["../x", "a/../../x", "./x", "a//b", "", "a\u0001b", "x".repeat(4097)])
      expect(observed(await w.act(FileWriteAction({ path, content: "x" })), "error").action_kind).toBe(
        "file_write",
      )
  })

  it("WS-05: a non-unique edit errors; replace_all counts; a missing string errors", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "f.txt", content: "a a a" }))
    expect(
      observed(await w.act(FileEditAction({ path: "f.txt", old: "a", new: "b" })), "error").message,
    ).toBe("old string is not unique; provide more context")
    expect(
      observed(await w.act(FileEditAction({ path: "f.txt", old: "zzz", new: "b" })), "error").message,
    ).toBe("old string not found")
    const all = observed(
      await w.act(FileEditAction({ path: "f.txt", old: "a", new: "$&b", replace_all: true })),
      "file_edit_ok",
    )
    expect(all.replacements).toBe(3)
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("$&b $&b $&b") // replacement text is literal
  })

  it("WS-06: test summaries: a real node:test run, and pytest/vitest output", async () => {
    const w = await startedWorkspace()
    await w.act(
      FileWriteAction({
        path: "t.test.mjs",
        content:
          "import test from 'node:test'\nimport assert from 'node:assert'\n" +
          "test('ok', () => {})\ntest('ok2', () => {})\ntest('bad', () => assert.equal(1, 2))\n",
      }),
    )
    const node = observed(
      await w.act(TestRunAction({ framework: "node", selector: "t.test.mjs" })),
      "test_result",
    )
    expect(node).toMatchObject({ passed: 2, failed: 1, errors: 0 })
    expect(node.exit_code).not.toBe(0)
    expect(node.report).toBe(`2 passed, 1 failed, 0 errors (exit ${node.exit_code})`)
    // pytest's summary, printed by a custom command (pytest itself is not installed here).
    const py = observed(
      await w.act(
        TestRunAction({ framework: "custom", selector: "echo '1 failed, 1 passed in 0.03s'; exit 1" }),
      ),
      "test_result",
    )
    expect(py).toMatchObject({
      passed: 1,
      failed: 1,
      errors: 0,
      exit_code: 1,
      report: "1 passed, 1 failed, 0 errors (exit 1)",
    })
    // An empty custom selector runs `make test` (here: no Makefile, or no make), never an empty, passing command.
    const empty = observed(await w.act(TestRunAction({ framework: "custom", selector: "" })), "test_result")
    expect(empty.exit_code).not.toBe(0)
    expect(empty.raw).toMatch(/make/)
    expect(parseTestSummary("==== 3 passed, 2 errors in 1.2s ====")).toEqual({
      passed: 3,
      failed: 0,
      errors: 2,
    })
    const vitest =
      "\u001b[2m Test Files \u001b[22m 1 failed | 2 passed (3)\n\u001b[2m      Tests \u001b[22m 1 failed | 7 passed (8)\n   Start at 12:00:00\n   Duration 1s"
    expect(parseTestSummary(vitest)).toEqual({ passed: 7, failed: 1, errors: 0 })
    expect(parseTestSummary("# tests 4\n# pass 4\n# fail 0\n")).toEqual({ passed: 4, failed: 0, errors: 0 })
    expect(parseTestSummary("nothing here")).toEqual({ passed: 0, failed: 0, errors: 0 })
  })

  it("WS-07: the policy gate denies workspace.cmd but allows a write; reads are never gated", async () => {
    const asked: string[] = []
    const w = await startedWorkspace({
      policyGate: (policy) => {
        asked.push(policy)
        return policy === "workspace.cmd" ? [false, "no shell for this agent"] : { allowed: true }
      },
    })
    const denied = observed(await w.act(CmdRunAction({ command: "touch should-not-exist" })), "error")
    expect(denied.message).toBe("action denied by policy: no shell for this agent")
    expect(existsSync(join(w.root, "should-not-exist"))).toBe(false)
    observed(await w.act(TestRunAction({ framework: "custom", selector: "true" })), "error")
    observed(await w.act(FileWriteAction({ path: "ok.txt", content: "fine" })), "file_write_ok")
    observed(await w.act(FileReadAction({ path: "ok.txt" })), "file_content")
    expect(asked).toEqual(["workspace.cmd", "workspace.cmd", "workspace.write"])
    expect(w.step).toBe(4) // denied actions still take a step
  })

  it("WS-08: steps stamp 1, 2 with the run id and actor on both action and observation", async () => {
    const w = await startedWorkspace({ runId: "r1", actor: "agent-7" })
    const a = await w.act(AgentFinishAction({ summary: "done" }))
    const b = await w.act(PortExposeAction({ port: 8080 }))
    expect(a).toMatchObject({ kind: "null", run_id: "r1", step: 1, actor: "agent-7" })
    expect(b).toMatchObject({ kind: "port", url: "http://localhost:8080", run_id: "r1", step: 2 })
    expect(b.ts).toBeGreaterThan(1e9)
  })

  it("WS-09: createWorkspace owns and deletes its temp root; an explicit root is kept", async () => {
    const w = createWorkspace()
    expect(w.runId).toMatch(/^[0-9a-f]{32}$/)
    expect(() => w.state).toThrow(WorkspaceNotStartedError)
    expect(() => w.root).toThrow(expect.objectContaining({ code: "workspace_not_started" }))
    const fileDir = mkdtempSync(join(tmpdir(), "ws-file-"))
    afterTest(() => rmSync(fileDir, { recursive: true, force: true }))
    const file = join(fileDir, "f")
    writeFileSync(file, "")
    await expect(createWorkspace({ root: file }).start()).rejects.toMatchObject({ code: "invalid_option" })
    await w.start()
    await w.start() // idempotent
    const root = w.root
    expect(existsSync(root)).toBe(true)
    await w.stop()
    await w.stop()
    expect(existsSync(root)).toBe(false)
    const mine = mkdtempSync(join(tmpdir(), "ws-mine-"))
    afterTest(() => rmSync(mine, { recursive: true, force: true }))
    await withWorkspace({ root: mine }, async (x) => {
      await x.act(FileWriteAction({ path: "kept.txt", content: "k" }))
    })
    expect(readFileSync(join(mine, "kept.txt"), "utf8")).toBe("k")
  })

  it("WS-10: absolute paths: under the workdir they work, elsewhere they are an error (no basename quirk)", async () => {
    const w = await startedWorkspace()
    observed(await w.act(FileWriteAction({ path: join(w.root, "abs.txt"), content: "in" })), "file_write_ok")
    expect(readFileSync(join(w.root, "abs.txt"), "utf8")).toBe("in")
    const o = observed(await w.act(FileWriteAction({ path: "/etc/x", content: "x" })), "error")
    expect(o.message).toContain("outside the workspace")
    expect(existsSync(join(w.root, "x"))).toBe(false)
  })

  it("WS-11: the 1 MiB limit applies to write, read and edit; output is truncated to 16,384 chars", async () => {
    const w = await startedWorkspace()
    const big = "x".repeat(1024 * 1024 + 1)
    expect(observed(await w.act(FileWriteAction({ path: "big", content: big })), "error").message).toContain(
      "larger than",
    )
    writeFileSync(join(w.root, "big"), big)
    expect(observed(await w.act(FileReadAction({ path: "big" })), "error").message).toContain("larger than")
    observed(await w.act(FileEditAction({ path: "big", old: "x", new: "y", replace_all: true })), "error")
    const out = observed(
      await w.act(CmdRunAction({ command: "head -c 100000 /dev/zero | tr '\\0' a; echo err >&2" })),
      "cmd_output",
    )
    expect(out.stdout).toHaveLength(16_384)
    expect(out.stderr).toBe("err\n")
  })

  it("WS-12: a timeout returns 124 and kills the command's process group", async () => {
    const w = await startedWorkspace()
    const t0 = Date.now()
    const o = observed(
      await w.act(CmdRunAction({ command: "sleep 30 & sleep 30; touch after", timeout: 0.3 })),
      "cmd_output",
    )
    expect(o).toMatchObject({ exit_code: 124, stdout: "", stderr: "command timed out after 0.3s" })
    expect(Date.now() - t0).toBeLessThan(5_000)
    expect(existsSync(join(w.root, "after"))).toBe(false)
  })

  it("read line ranges are 1-based inclusive", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "l.txt", content: "one\ntwo\nthree\nfour\n" }))
    expect(
      observed(await w.act(FileReadAction({ path: "l.txt", start: 2, end: 3 })), "file_content").content,
    ).toBe("two\nthree")
    expect(observed(await w.act(FileReadAction({ path: "l.txt", start: 3 })), "file_content").content).toBe(
      "three\nfour\n",
    )
    expect(observed(await w.act(FileReadAction({ path: "l.txt", end: 1 })), "file_content").content).toBe(
      "one",
    )
    expect(observed(await w.act(FileReadAction({ path: "missing" })), "error").message).toContain(
      "no such file",
    )
  })

  it("act never throws: garbage, unknown kinds and directory targets become ErrorObservation", async () => {
    const w = await startedWorkspace()
    mkdirSync(join(w.root, "dir"))
    expect(observed(await w.act({ kind: "rm_rf" } as unknown as WorkspaceAction), "error").message).toBe(
      "unknown action kind 'rm_rf'",
    )
    expect(observed(await w.act(null as unknown as WorkspaceAction), "error").message).toBe(
      "unknown action kind 'undefined'",
    )
    // An unexpected failure is reported generically: no host detail reaches the agent.
    const leaky = await startedWorkspace({
      policyGate: () => {
        throw new Error("db password is hunter2")
      },
    })
    expect(observed(await leaky.act(CmdRunAction({ command: "true" })), "error").message).toBe(
      "workspace action failed",
    )
    observed(await w.act(FileReadAction({ path: "dir" })), "error")
    observed(await w.act(FileWriteAction({ path: "dir", content: "x" })), "error")
  })

  it("actions are frozen and round-trip through the wire to the exact subtype", () => {
    const a = CmdRunAction({ command: "ls" })
    expect(Object.isFrozen(a)).toBe(true)
    expect(a).toMatchObject({
      kind: "cmd_run",
      cwd: null,
      timeout: 120,
      run_id: "",
      step: 0,
      ts: 0,
      actor: null,
    })
    for (const action of [
      a,
      FileReadAction({ path: "p", start: 1, end: 2 }),
      FileEditAction({ path: "p", old: "a", new: "b" }),
      TestRunAction({ selector: "tests" }),
    ])
      expect(parseAction(JSON.parse(JSON.stringify(action)))).toEqual(action)
    expect(TestRunAction()).toMatchObject({ framework: "pytest", timeout: 600, selector: null })
    expect(() => parseAction({ kind: "nope" })).toThrow("unknown action kind")
    expect(() => parseAction({ kind: "cmd_run", command: 5 })).toThrow("must be a string")
    expect(() => parseAction({ kind: "cmd_run", command: "ls", extra: 1 })).toThrow("no field 'extra'")
    expect(parseObservation({ kind: "null", run_id: "r", step: 1, ts: 0, actor: null }).kind).toBe("null")
    expect(() => parseObservation({ kind: "??" })).toThrow()
    expect(MUTATING_POLICY_NAMES).toEqual([
      "workspace.cmd",
      "workspace.write",
      "workspace.edit",
      "workspace.browse",
      "workspace.computer_use",
    ])
  })
})

describe("parseAction on hostile wire text", () => {
  // `kind in ACTION_FIELDS` matched Object.prototype's names: "__proto__" threw a TypeError, the others built junk.
  it("a kind named after an Object.prototype member is an unknown kind", () => {
    for (const kind of ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"])
      expect(() => parseAction(JSON.parse(`{"kind": "${kind}"}`)), kind).toThrow(WorkspaceEventParseError)
    expect(() => parseAction(JSON.parse('{"kind": "cmd_run", "command": "ls", "__proto__": 1}'))).toThrow(
      "no field '__proto__'",
    )
  })

  it("a long kind or field name is clipped in the message", () => {
    const big = "k".repeat(100_000)
    for (const bad of [{ kind: big }, { kind: "cmd_run", command: "ls", [big]: 1 }]) {
      const e = (() => {
        try {
          parseAction(bad)
        } catch (err) {
          return err as Error
        }
      })()
      expect(e).toBeInstanceOf(WorkspaceEventParseError)
      expect(e).toMatchObject({ code: "invalid_workspace_event" })
      expect(e?.message.length).toBeLessThan(400)
    }
    expect(() => parseObservation({ kind: big })).toThrow(/^unknown observation kind '.{300}\.\.\.'$/)
  })
})
