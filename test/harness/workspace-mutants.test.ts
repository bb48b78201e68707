// Workspace guards that the other workspace tests leave unobserved: the exact file and path limits, containment of
// absolute paths, a write under a swap after the lstat check, shell quoting and environment, what a timeout
// kills, policy verdicts that are not booleans, edits, test-run output and the harness tools' argument handling.
import { execFileSync } from "node:child_process"
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it, vi } from "vitest"
import type { ToolContext } from "../../src/core/harness/index.ts"
import {
  CmdRunAction,
  FileEditAction,
  FileReadAction,
  FileWriteAction,
  MAX_FILE_BYTES,
  MAX_STREAM_CHARS,
  type PolicyVerdict,
  parseTestSummary,
  TestRunAction,
  workspaceTools,
} from "../../src/harness/workspace/index.ts"
import { pathComponents } from "../../src/harness/workspace/safe-fs.ts"
import { afterTest, alive, observed, sleep, startedWorkspace, within } from "./started-workspace.ts"

// Runs after every lstat (also one that throws ENOENT): lets a test swap the target the way a background job could.
const hook: { afterLstat: ((path: string) => void) | null } = { afterLstat: null }

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>()
  const lstat = async (...args: Parameters<typeof real.lstat>) => {
    try {
      return await real.lstat(...args)
    } finally {
      hook.afterLstat?.(String(args[0]))
    }
  }
  return { ...real, default: { ...real, lstat }, lstat }
})

function swapAfterLstat(target: string, swap: () => void): void {
  hook.afterLstat = (path) => {
    if (path !== target) return
    hook.afterLstat = null
    swap()
  }
  afterTest(() => {
    hook.afterLstat = null
  })
}

function outsideDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ws-mut-outside-"))
  afterTest(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const isLinux = process.platform === "linux"

describe("path limits and containment", () => {
  it("a path of exactly MAX_PATH_CHARS characters passes the length rule; one more is refused", () => {
    const exact = `${"a/".repeat(2047)}bc`
    expect(exact).toHaveLength(4096)
    expect(pathComponents(exact, "/ws")).toHaveLength(2048)
    expect(() => pathComponents(`${exact}d`, "/ws")).toThrow("longer than 4096 characters")
  })

  it("an over-long path of many components is refused before any directory is created", async () => {
    const w = await startedWorkspace()
    const path = `${"a/".repeat(2049)}x`
    const o = observed(await w.act(FileWriteAction({ path, content: "x" })), "error")
    expect(o.message).toContain("longer than 4096")
    expect(existsSync(join(w.root, "a"))).toBe(false)
  })

  it("an absolute path into a sibling whose name extends the root's is refused, not mapped into the root", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(FileWriteAction({ path: `${w.root}-other/x`, content: "x" })), "error")
    expect(o.message).toContain("outside the workspace")
    expect(existsSync(join(w.root, "other"))).toBe(false)
    expect(existsSync(`${w.root}-other`)).toBe(false)
  })

  it("a read of a missing nested path creates no directories (reads are not policy-gated)", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(FileReadAction({ path: "no/such/file.txt" })), "error")
    expect(o.message).toContain("no such directory")
    expect(existsSync(join(w.root, "no"))).toBe(false)
  })

  it("a root given through a symlink is its real path, so absolute paths from pwd are inside", async () => {
    const real = outsideDir()
    const link = join(outsideDir(), "link")
    symlinkSync(real, link)
    const w = await startedWorkspace({ root: link })
    expect(w.root).toBe(realpathSync(real))
    const pwd = observed(await w.act(CmdRunAction({ command: "pwd" })), "cmd_output").stdout.trim()
    observed(await w.act(FileWriteAction({ path: join(pwd, "abs.txt"), content: "in" })), "file_write_ok")
    expect(readFileSync(join(real, "abs.txt"), "utf8")).toBe("in")
  })
})

describe("file size limits", () => {
  it("a directory as the write target is refused with the reason", async () => {
    const w = await startedWorkspace()
    mkdirSync(join(w.root, "dir"))
    const o = observed(await w.act(FileWriteAction({ path: "dir", content: "x" })), "error")
    expect(o.message).toBe("target exists and is not a regular file")
  })

  it("a file of exactly MAX_FILE_BYTES can be written and read; the limit is inclusive", async () => {
    const w = await startedWorkspace()
    const exact = "x".repeat(MAX_FILE_BYTES)
    const wrote = observed(await w.act(FileWriteAction({ path: "exact", content: exact })), "file_write_ok")
    expect(wrote.bytes_written).toBe(MAX_FILE_BYTES)
    const read = observed(await w.act(FileReadAction({ path: "exact" })), "file_content")
    expect(read.content).toHaveLength(MAX_FILE_BYTES)
  })

  it("the write limit counts UTF-8 bytes, not characters", async () => {
    const w = await startedWorkspace()
    const content = "é".repeat(600_000) // 1.2 MB of UTF-8 in 600,000 characters
    const o = observed(await w.act(FileWriteAction({ path: "wide", content })), "error")
    expect(o.message).toContain("larger than")
    expect(existsSync(join(w.root, "wide"))).toBe(false)
  })

  it("a huge (sparse) file is refused by its size before it is read", async () => {
    const w = await startedWorkspace()
    const file = join(w.root, "huge")
    writeFileSync(file, "")
    truncateSync(file, 3 * 1024 ** 3)
    const o = observed(await w.act(FileReadAction({ path: "huge" })), "error")
    expect(o.message).toContain("larger than")
  })

  it("overwriting with shorter content leaves no tail of the old content", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "f.txt", content: "0123456789" }))
    observed(await w.act(FileWriteAction({ path: "f.txt", content: "ab" })), "file_write_ok")
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("ab")
  })
})

// A write renames a new file over the target (safe-fs.ts), so whatever a background job swaps in after the lstat
// check is replaced, never written through: a symlink's target and a FIFO's reader get nothing.
describe.skipIf(!isLinux)("a target swapped after its lstat check", () => {
  it("a FIFO swapped in with a reader waiting gets nothing: it is replaced by a regular file", async () => {
    const w = await startedWorkspace()
    const target = join(w.root, "t.txt")
    writeFileSync(target, "old")
    let reader: number | undefined
    swapAfterLstat(target, () => {
      unlinkSync(target)
      execFileSync("mkfifo", [target])
      reader = openSync(target, constants.O_RDONLY | constants.O_NONBLOCK)
    })
    afterTest(() => {
      if (reader !== undefined) closeSync(reader)
    })
    observed(await w.act(FileWriteAction({ path: "t.txt", content: "x" })), "file_write_ok")
    // No writer ever opened the FIFO: its reader is at end of file.
    expect(readSync(reader as number, Buffer.alloc(8))).toBe(0)
    expect([lstatSync(target).isFile(), readFileSync(target, "utf8")]).toEqual([true, "x"])
  })

  it("a symlink swapped in is replaced, not followed", async () => {
    const w = await startedWorkspace()
    const secret = join(outsideDir(), "secret")
    writeFileSync(secret, "s3cret")
    const target = join(w.root, "t.txt")
    swapAfterLstat(target, () => symlinkSync(secret, target))
    observed(await w.act(FileWriteAction({ path: "t.txt", content: "pwned" })), "file_write_ok")
    expect(readFileSync(secret, "utf8")).toBe("s3cret")
    expect([lstatSync(target).isSymbolicLink(), readFileSync(target, "utf8")]).toEqual([false, "pwned"])
  })

  it("a FIFO swapped in does not block the write", async () => {
    const w = await startedWorkspace()
    const target = join(w.root, "t.txt")
    writeFileSync(target, "old")
    swapAfterLstat(target, () => {
      unlinkSync(target)
      execFileSync("mkfifo", [target])
    })
    // If an open of the FIFO did block, a reader releases it so the test process is not left with a stuck thread.
    afterTest(() => {
      try {
        closeSync(openSync(target, constants.O_RDONLY | constants.O_NONBLOCK))
      } catch {}
    })
    observed(await within(w.act(FileWriteAction({ path: "t.txt", content: "x" })), 3_000), "file_write_ok")
    expect(readFileSync(target, "utf8")).toBe("x")
  })

  it("a directory swapped in fails the write, and its new file is removed", async () => {
    const w = await startedWorkspace()
    const target = join(w.root, "t.txt")
    writeFileSync(target, "old")
    swapAfterLstat(target, () => {
      unlinkSync(target)
      mkdirSync(target)
    })
    observed(await w.act(FileWriteAction({ path: "t.txt", content: "x" })), "error")
    expect(readdirSync(w.root)).toEqual(["t.txt"])
    expect(lstatSync(target).isDirectory()).toBe(true)
  })
})

describe("the shell", () => {
  it("a relative cwd whose name starts with '-' is a directory, not a cd option", async () => {
    const w = await startedWorkspace()
    observed(await w.act(CmdRunAction({ command: "mkdir -- -P" })), "cmd_output")
    const o = observed(await w.act(CmdRunAction({ command: "pwd", cwd: "-P" })), "cmd_output")
    expect([o.exit_code, o.stdout, o.cwd]).toEqual([0, `${join(w.root, "-P")}\n`, join(w.root, "-P")])
  })

  it("the cwd persists when the temp directory's path has a space and a quote in it", async () => {
    const saved = process.env.TMPDIR
    const tmp = mkdtempSync(join(tmpdir(), "ws mut 'q "))
    process.env.TMPDIR = tmp
    afterTest(() => rmSync(tmp, { recursive: true, force: true }))
    try {
      const w = await startedWorkspace()
      const o = observed(await w.act(CmdRunAction({ command: "mkdir -p pkg && cd pkg" })), "cmd_output")
      expect(o.cwd).toBe(join(w.root, "pkg"))
      const pwd = observed(await w.act(CmdRunAction({ command: "pwd" })), "cmd_output")
      expect(pwd.stdout).toBe(`${join(w.root, "pkg")}\n`)
    } finally {
      if (saved === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = saved
    }
  })

  it("the workspace env overrides the process env", async () => {
    const w = await startedWorkspace({ env: { HOME: "/ws-mut-home" } })
    w.setEnv("PATH", `/ws-mut-bin:${process.env.PATH ?? ""}`)
    const command = 'echo "$HOME" "$PATH" | cut -d: -f1'
    const o = observed(await w.act(CmdRunAction({ command })), "cmd_output")
    expect(o.stdout).toBe("/ws-mut-home /ws-mut-bin\n")
  })

  it("a timeout of some seconds is honoured for a command that ends well within it", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(CmdRunAction({ command: "sleep 0.5; echo ok", timeout: 2 })), "cmd_output")
    expect([o.exit_code, o.stdout]).toEqual([0, "ok\n"])
  })

  it.skipIf(!isLinux)("a timeout kills the command's background jobs too, not only the shell", async () => {
    const w = await startedWorkspace()
    const o = observed(
      await w.act(CmdRunAction({ command: "sleep 4242 & echo $! > pid; sleep 30", timeout: 0.5 })),
      "cmd_output",
    )
    expect(o.exit_code).toBe(124)
    const pid = Number(readFileSync(join(w.root, "pid"), "utf8"))
    expect(pid).toBeGreaterThan(0)
    afterTest(() => {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    })
    for (let i = 0; i < 40 && alive(pid); i++) await sleep(50)
    expect(alive(pid)).toBe(false) // before stop(): the timeout itself ended it
  })

  it("a test_run selector is quoted word by word: it never runs as shell code", async () => {
    const w = await startedWorkspace()
    for (const selector of ["x.mjs;touch pwned", "$(touch pwned2)", "`touch pwned3`"])
      observed(await w.act(TestRunAction({ framework: "node", selector })), "test_result")
    for (const f of ["pwned", "pwned2", "pwned3"]) expect(existsSync(join(w.root, f))).toBe(false)
  })

  it("a test_run keeps the end of long output: the summary is counted and raw ends with it, capped", async () => {
    const w = await startedWorkspace()
    const o = observed(
      await w.act(
        TestRunAction({
          framework: "custom",
          selector: "head -c 100000 /dev/zero | tr '\\0' x; echo; echo '3 passed, 1 failed in 0.1s'",
        }),
      ),
      "test_result",
    )
    expect(o).toMatchObject({ passed: 3, failed: 1, errors: 0, exit_code: 0 })
    expect(o.raw.length).toBeLessThanOrEqual(MAX_STREAM_CHARS)
    expect(o.raw.endsWith("3 passed, 1 failed in 0.1s")).toBe(true)
  })
})

describe("policy verdicts that are not booleans", () => {
  for (const verdict of [{ allowed: null }, {}, { allowed: 0 }, [0], [null, "no"], []])
    it(`${JSON.stringify(verdict)} denies`, async () => {
      const w = await startedWorkspace({ policyGate: () => verdict as unknown as PolicyVerdict })
      const o = observed(await w.act(FileWriteAction({ path: "f.txt", content: "x" })), "error")
      expect(o.message).toContain("action denied by policy")
      expect(existsSync(join(w.root, "f.txt"))).toBe(false)
    })
})

describe("reads and edits", () => {
  it("a line range starting at 0 or below reads from line 1", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "l.txt", content: "one\ntwo\nthree\n" }))
    for (const start of [0, -3])
      expect(
        observed(await w.act(FileReadAction({ path: "l.txt", start, end: 2 })), "file_content").content,
      ).toBe("one\ntwo")
  })

  it("an empty old string is refused and the file is left as it was, also with replace_all", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "f.txt", content: "abc" }))
    for (const replace_all of [false, true])
      expect(
        observed(await w.act(FileEditAction({ path: "f.txt", old: "", new: "-", replace_all })), "error")
          .message,
      ).toBe("old string must not be empty")
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("abc")
  })

  it("a single replacement is literal: '$&' and '$1' are not patterns", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "f.txt", content: "x y z" }))
    observed(await w.act(FileEditAction({ path: "f.txt", old: "y", new: "$&$1$$" })), "file_edit_ok")
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("x $&$1$$ z")
  })

  it("the diff of a large edit is capped at MAX_STREAM_CHARS", async () => {
    const w = await startedWorkspace()
    await w.act(FileWriteAction({ path: "f.txt", content: "a\n".repeat(20_000) }))
    const o = observed(
      await w.act(FileEditAction({ path: "f.txt", old: "a", new: "b", replace_all: true })),
      "file_edit_ok",
    )
    expect(o.replacements).toBe(20_000)
    expect(o.diff.length).toBeLessThanOrEqual(MAX_STREAM_CHARS)
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("b\n".repeat(20_000))
  })
})

describe("harness tools", () => {
  const ctx = { signal: new AbortController().signal } as unknown as ToolContext
  const toolsOf = async () => {
    const w = await startedWorkspace({ runId: "run-mut", actor: "agent-x" })
    const tools = Object.fromEntries(workspaceTools(w).map((t) => [t.name, t]))
    return { w, tools }
  }

  it("bad arguments come back as an error observation, never a throw, and nothing runs", async () => {
    const { w, tools } = await toolsOf()
    for (const args of [{}, { command: 5 }, { command: null }])
      expect(await tools.cmd_run?.execute(args, ctx)).toEqual({
        kind: "error",
        message: "'command' must be a string",
        action_kind: "cmd_run",
      })
    expect(await tools.file_write?.execute({ path: "p" }, ctx)).toMatchObject({
      kind: "error",
      message: "'content' must be a string",
    })
    expect(w.step).toBe(0)
  })

  it("the observation for the model carries no run id, timestamp or actor", async () => {
    const { tools } = await toolsOf()
    const obs = (await tools.cmd_run?.execute({ command: "echo hi" }, ctx)) as Record<string, unknown>
    expect(obs).toMatchObject({ kind: "cmd_output", stdout: "hi\n", exit_code: 0 })
    for (const key of ["run_id", "ts", "actor"]) expect(obs).not.toHaveProperty(key)
  })

  it("replace_all is on only for the boolean true", async () => {
    const { w, tools } = await toolsOf()
    writeFileSync(join(w.root, "f.txt"), "a a")
    for (const replace_all of ["true", 1, "false"])
      expect(
        await tools.file_edit?.execute({ path: "f.txt", old: "a", new: "b", replace_all }, ctx),
      ).toMatchObject({ kind: "error", message: "old string is not unique; provide more context" })
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("a a")
  })

  it("cmd_run without a timeout gets the 120 s default, not a short one", async () => {
    const { tools } = await toolsOf()
    expect(await tools.cmd_run?.execute({ command: "sleep 1.2; echo done" }, ctx)).toMatchObject({
      kind: "cmd_output",
      exit_code: 0,
      stdout: "done\n",
    })
  })
})

describe("test summaries", () => {
  it("node's coloured spec reporter is parsed, cancelled tests counted as errors", () => {
    const out = [
      "\u001b[34mℹ tests 6\u001b[39m",
      "\u001b[34mℹ pass 3\u001b[39m",
      "\u001b[34mℹ fail 1\u001b[39m",
      "\u001b[34mℹ cancelled 2\u001b[39m",
    ].join("\n")
    expect(parseTestSummary(out)).toEqual({ passed: 3, failed: 1, errors: 2 })
  })

  it("the last of several summaries counts (node and pytest)", () => {
    expect(parseTestSummary("# pass 1\n# fail 5\n...\n# pass 7\n# fail 0\n")).toEqual({
      passed: 7,
      failed: 0,
      errors: 0,
    })
    expect(parseTestSummary("== 1 failed, 2 passed in 0.1s ==\nrerun\n== 4 passed in 0.1s ==")).toEqual({
      passed: 4,
      failed: 0,
      errors: 0,
    })
  })

  it("pytest's singular '1 error' is counted", () => {
    expect(parseTestSummary("==== 1 failed, 2 passed, 1 error in 0.3s ====")).toEqual({
      passed: 2,
      failed: 1,
      errors: 1,
    })
  })

  it("a lone node pass line without its fail line is no summary, and does not throw", () => {
    expect(parseTestSummary("# pass 3\n")).toEqual({ passed: 0, failed: 0, errors: 0 })
    expect(parseTestSummary("# fail 3\n")).toEqual({ passed: 0, failed: 0, errors: 0 })
  })
})
