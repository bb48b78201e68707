// The command line as a shell sees it: exit codes, one-line messages, no stack traces. (The missing-optional-package
// path needs a project without hono/zod/jose: scripts/check-package.mjs runs it against the packed tarball.)
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cliCommand } from "./cli-bin.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-cli-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const mycelium = (...args: string[]) => {
  const [cmd, pre] = cliCommand()
  const r = spawnSync(cmd, [...pre, ...args], { cwd, encoding: "utf8" })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, firstLine: r.stderr.split("\n")[0] ?? "" }
}

describe("mycelium CLI", () => {
  it("help lists the commands and exits 0", () => {
    const r = mycelium("--help")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("commands:")
    expect(r.stdout).toMatch(/\bdemo\b[\s\S]*\bserve\b[\s\S]*\btransitions\b[\s\S]*\brelease\b/)
  })

  it("help names every --store the demo accepts", () => {
    const demoLine =
      mycelium("--help")
        .stdout.split("\n")
        .find((l) => l.trimStart().startsWith("demo ")) ?? ""
    const stores = /--store ([a-z|]+)/.exec(demoLine)?.[1]?.split("|") ?? []
    expect(stores).toEqual(["file", "memory", "config"])
    const demoHelp = mycelium("demo", "--help").stdout
    for (const store of stores) expect(demoHelp, store).toContain(`--store ${store}`)
  })

  it("usage errors exit 2 with one line saying what is wrong, never a stack", () => {
    const cases: Array<[string[], RegExp]> = [
      [["nope"], /unknown command 'nope'/],
      [["demo", "--port", "99999"], /--port must be 0..65535/],
      [
        ["transitions", "--bogus"],
        /transitions list: unknown option '--bogus' \(see mycelium transitions list --help\)/,
      ],
      [["release"], /needs a request id/],
      [
        ["release", "x", "--verified", "maybe", "--reason", "r", "--by", "me"],
        /--verified must be completed or not-executed/,
      ],
    ]
    for (const [args, message] of cases) {
      const r = mycelium(...args)
      expect(r.code, args.join(" ")).toBe(2)
      expect(r.firstLine, args.join(" ")).toMatch(message)
      expect(r.stderr, args.join(" ")).not.toMatch(/\n\s+at /)
    }
  })

  it("a refused operation exits 1 and names the error", () => {
    const ledger = join(cwd, "empty.json")
    const list = mycelium("transitions", "--ledger", ledger)
    expect(list.code).toBe(0)
    expect(list.stdout).toMatch(/^no transitions found in file .*empty\.json/)
    const r = mycelium(
      "release",
      "missing-id",
      "--verified",
      "completed",
      "--reason",
      "r",
      "--by",
      "me",
      "--ledger",
      ledger,
    )
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split("\n")).toHaveLength(1)
    expect(r.firstLine).toMatch(/^mycelium: refused: /)
  })
})
