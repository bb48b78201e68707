// A value flag given empty or blank (`--tool "$TOOL"` with TOOL unset) read as left out: `transitions list --tool ""`
// listed every tool, `receipts export --agent-id ""` every agent's receipts, `release --by " "` signed a verdict by
// nobody. Every command's value flags now refuse it (exit 2, one line naming the flag), `--prefix` excepted: '' is a
// Redis prefix a store may use.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-blank-flags-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// Killed after 10 s: a server that starts instead shows as a null exit code.
const run = cliRunner(cwd, { timeout: 10_000 })
const file = join(cwd, "ledger.json")

beforeAll(async () => {
  const now = Date.now() / 1000
  const storage = new FileLedgerStorage(file)
  for (const [requestId, tool] of [
    ["pay:1", "pay"],
    ["refund:1", "refund"],
  ] as const)
    await storage.set({
      ...newEntry({ requestId, tool, owner: "w1", fence: 1, leaseUntil: now - 10 }, now - 50),
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
    })
})

const RELEASE = ["x", "--verified", "completed", "--by", "ops", "--reason", "r", "--file", file]
const MARK = ["x", "--by", "ops", "--reason", "r", "--file", file]
const TASK_RELEASE = ["x", "--verified", "completed", "--by", "ops", "--reason", "r"]
const EXPORT = ["--url", "http://127.0.0.1:1"]

/** [the command line before the flag, the command as messages name it, the flag] */
const CASES: [string[], string, string][] = [
  [["transitions", "list", "--file", file], "transitions list", "tool"],
  [["transitions", "list", "--file", file, "--stuck"], "transitions list", "tool"],
  [["transitions", "show", "pay:1"], "transitions show", "file"],
  [["transitions", "release", ...RELEASE], "transitions release", "verified"],
  [["transitions", "release", ...RELEASE], "transitions release", "by"],
  [["transitions", "release", ...RELEASE], "transitions release", "reason"],
  [["transitions", "release", ...RELEASE], "transitions release", "result-json"],
  [["transitions", "release", ...RELEASE], "transitions release", "fence"],
  [["release", ...RELEASE], "release", "by"],
  [["transitions", "mark-dead", ...MARK], "transitions mark-dead", "by"],
  [["transitions", "mark-dead", ...MARK], "transitions mark-dead", "reason"],
  [["transitions", "list", "--postgres-dsn", "postgres://u@127.0.0.1:1/db"], "transitions list", "table"],
  [["tasks", "list"], "tasks list", "file"],
  [["tasks", "release", ...TASK_RELEASE], "tasks release", "by"],
  [["tasks", "release", ...TASK_RELEASE], "tasks release", "reason"],
  [["tasks", "release", ...TASK_RELEASE], "tasks release", "verified"],
  [["receipts", "export", ...EXPORT], "receipts export", "agent-id"],
  [["receipts", "export", ...EXPORT], "receipts export", "ledger"],
  [["receipts", "export", ...EXPORT], "receipts export", "token-env"],
  [["receipts", "export", ...EXPORT], "receipts export", "output"],
  [["receipts", "export"], "receipts export", "url"],
  [["receipts", "verify"], "receipts verify", "jwks"],
  [["receipts", "verify"], "receipts verify", "key-env"],
  [["doctor"], "doctor", "timeout"],
  [["doctor"], "doctor", "config"],
  [["demo"], "demo", "store"],
  [["demo"], "demo", "ledger"],
  [["serve", "--port", "0"], "serve", "ledger"],
  [["serve", "--port", "0"], "serve", "config"],
  [["serve"], "serve", "port"],
  [["init"], "init", "output"],
]

describe("an empty or blank value of any value flag is a usage error naming it", () => {
  it.each(CASES)("%j (%s) --%s", (given, command, flag) => {
    // The flag's own value taken out first: given twice, it would be refused for that.
    const at = given.indexOf(`--${flag}`)
    const before = at < 0 ? given : [...given.slice(0, at), ...given.slice(at + 2)]
    // Each spelling: `--flag ''`, `--flag=` blank, and invisible characters only (String.trim() keeps a zero-width
    // space, a word joiner and a BOM: `--by $'\u200b'` signed a verdict no one can read).
    const spellings: [string[], string][] = [
      [[...before, `--${flag}`, ""], "empty"],
      [[...before, `--${flag}= \t`], "blank"],
      [[...before, `--${flag}=\u200b\u2060\ufeff`], "blank"],
    ]
    for (const [args, word] of spellings) {
      const r = run(args, { MYCELIUM_TOKEN: "" })
      expect([r.code, r.err.split("\n")[0]], `${JSON.stringify(args)}\n${r.out}`).toEqual([
        2,
        `mycelium: ${command}: --${flag} is ${word} (an unset variable?): pass a value, or leave it out`,
      ])
      expect(r.out).toBe("")
    }
  })

  it("list --tool '' lists nothing, where it listed every tool; --tool pay lists pay's rows only", () => {
    const empty = run(["transitions", "list", "--file", file, "--tool", ""])
    expect([empty.code, empty.out]).toEqual([2, ""])
    const pay = run(["transitions", "list", "--file", file, "--tool", "pay"])
    expect(pay.code, pay.err).toBe(0)
    expect(pay.out.trim().split("\n")).toEqual([expect.stringMatching(/^pay:1 {2}pay {2}UNKNOWN/)])
  })

  it("--prefix '' names the empty Redis prefix, as a store may use: taken as given, not refused", () => {
    // Nothing listens on port 1: the command got as far as the store (exit 1), past the flag checks (exit 2).
    const r = run(["transitions", "list", "--redis-url", "redis://127.0.0.1:1", "--prefix", ""])
    expect([r.code, r.err]).toEqual([1, expect.stringContaining("ECONNREFUSED")])
  })

  it("the flags that say why themselves keep their own words", () => {
    for (const why of [" ", "\u200b", "\u2060\ufeff"]) {
      const override = run(["transitions", "release", ...RELEASE, "--override-death-signal", why])
      expect([override.code, override.err]).toEqual([
        2,
        expect.stringContaining("--override-death-signal must say why"),
      ])
    }
    const token = run(["serve", "--port", "0", "--token", " "], { MYCELIUM_TOKEN: "" })
    expect([token.code, token.err]).toEqual([2, expect.stringContaining("serve: --token is empty or blank")])
  })
})
