// Command lines that named one thing and acted on another: an empty store flag (`--file "$LEDGER"` with LEDGER
// unset) read as left out, so the command used the store a variable, ./mycelium.yaml or the default names; `-o=x`
// wrote a file named "=x"; and `doctor` on a config whose ledger file is a FIFO or a device never came back.
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-empty-flags-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// Killed after 10 s: a server that starts, or a doctor that hangs, shows as a null exit code.
const run = cliRunner(cwd, { timeout: 10_000 })

function usage(r: { code: number | null; err: string; out: string }, text: RegExp): void {
  expect([r.code, r.err], r.out).toEqual([2, expect.stringMatching(text)])
  expect(r.err).not.toMatch(/\n\s+at /)
}

describe("an empty store flag is a usage error, never another store", () => {
  // Any store flag wins over the variables (docs/cli.md): an empty one must not hand the command to them.
  const env = {
    MYCELIUM_LEDGER_FILE: join(cwd, "env-ledger.json"),
    MYCELIUM_TASK_FILE: join(cwd, "env-tasks.json"),
  }
  it.each([
    [["transitions", "list", "--file", ""], /transitions list: --file is empty/],
    [["transitions", "list", "--ledger", ""], /transitions list: --ledger is empty/],
    [["transitions", "list", "--redis-url", ""], /transitions list: --redis-url is empty/],
    [["transitions", "show", "x", "--postgres-dsn", ""], /transitions show: --postgres-dsn is empty/],
    [["transitions", "show", "x", "-c", ""], /transitions show: --config is empty/],
    [
      ["release", "x", "--verified", "not-executed", "--by", "ops", "--reason", "r", "--file", ""],
      /release: --file is empty/,
    ],
    [["tasks", "list", "--file", ""], /tasks list: --file is empty/],
    [["tasks", "list", "--config="], /tasks list: --config is empty/],
    [["doctor", "-c", ""], /doctor: --config is empty/],
    [["receipts", "verify", "-c", ""], /receipts verify: --config is empty/],
    [["receipts", "verify", ""], /receipts verify: the file argument is empty/],
    [["receipts", "verify", "--key-env", ""], /receipts verify: --key-env is empty/],
  ])("%j", (args, text) => {
    const r = run(args, env)
    usage(r, text)
    expect(r.out).not.toMatch(/env-ledger|env-tasks|\.mycelium/)
  })
  it("serve --port '' or a blank port is refused, not served on a random port", () => {
    usage(run(["serve", "--port", ""], { MYCELIUM_TOKEN: "" }), /serve: --port is empty/)
    usage(run(["serve", "--port", " "], { MYCELIUM_TOKEN: "" }), /serve: --port is blank/)
  })
})

describe("a short flag written with '='", () => {
  it("init -o=x.yaml writes no file named '=x.yaml'", () => {
    usage(
      run(["init", "-o=x.yaml"]),
      /init: --output '=x\.yaml' starts with '=': write -o PATH or --output=PATH/,
    )
    expect(existsSync(join(cwd, "=x.yaml"))).toBe(false)
  })
  it("doctor -c=mycelium.yaml says how to write it", () => {
    usage(run(["doctor", "-c=mycelium.yaml"]), /write -c PATH or --config=PATH/)
  })
})

describe("doctor on a config whose ledger file is not a file", () => {
  const config = (name: string, path: string, section = "action_ledger"): string => {
    const file = join(cwd, name)
    const tools =
      section === "action_ledger" ? "  tools: [t]\ntools:\n  t:\n    side_effect_class: read\n" : ""
    const tasks = section === "task_ledger" ? "tasks:\n  nightly:\n    ledger: true\n" : ""
    writeFileSync(
      file,
      `transition:\n  agent_id: a\n  policy_version: v\n${section}:\n  storage: file\n  path: ${path}\n${tools}${tasks}`,
    )
    return file
  }
  const fifo = join(cwd, "ledger.fifo")
  execFileSync("mkfifo", [fifo])
  mkdirSync(join(cwd, "a-dir"))
  it.each([
    ["a FIFO", fifo, "action_ledger"],
    ["a FIFO (task ledger)", fifo, "task_ledger"],
    ["/dev/zero", "/dev/zero", "action_ledger"],
    ["a directory", join(cwd, "a-dir"), "action_ledger"],
  ])("%s: a FAIL within --timeout, not a process that never ends", (_, path, section) => {
    const r = run(["doctor", "-c", config(`doctor-${section}.yaml`, path, section), "--timeout", "1"])
    expect([r.code, r.err], r.out).toEqual([1, ""])
    expect(r.out).toMatch(/FAIL {2}ledger\.connectivity\(.*\) {2}.* is not a regular file/)
  })
})

// process.env[name] with a name of the caller's read Object.prototype: `--key-env __proto__` crashed with
// `TypeError: s.replace is not a function` (exit 1), and `--token-env __proto__` held an object as the token.
describe("a variable name that is a property of every object", () => {
  writeFileSync(join(cwd, "receipts.jsonl"), "")
  it.each(["__proto__", "constructor", "toString"])(
    "receipts verify --key-env %s is not set (exit 2)",
    (name) => {
      const r = run(["receipts", "verify", "receipts.jsonl", "--key-env", name])
      usage(
        r,
        new RegExp(`^mycelium: receipts verify: set ${name} to the signing key \\(or pass --jwks FILE\\)\n`),
      )
      expect(r.err).not.toMatch(/TypeError|is not a function/)
    },
  )
  it.each(["__proto__", "constructor"])("receipts export --token-env %s is not set (exit 2)", (name) => {
    const r = run(["receipts", "export", "--url", "http://127.0.0.1:1", "--token-env", name])
    usage(r, new RegExp(`^mycelium: receipts export: ${name} is not set\n`))
  })
})
