// Command lines that used to run as something else than what was typed: an empty --token serving with no auth, a
// --result-json number stored as another value, a write through a dangling symlink, a raw EISDIR or a Redis
// connection error where the mistake is the caller's. Each is now a one-line usage error (exit 2) or a refusal.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { parseResultJson } from "../../src/cli/options.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-usage-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

function usage(r: { code: number | null; err: string }, text: string | RegExp): void {
  expect(r.code, r.err).toBe(2)
  expect(r.err).toMatch(text)
  expect(r.err).not.toMatch(/\n\s+at |EISDIR|RedisConnectionError/)
}

// A server that starts would run until killed: the time limit turns the old behaviour into a failed assertion.
function startBriefly(args: string[], env: Record<string, string> = {}) {
  const [cmd, pre] = cliCommand()
  const r = spawnSync(cmd, [...pre, ...args], {
    cwd,
    encoding: "utf8",
    timeout: 15_000,
    env: { ...process.env, NO_COLOR: "1", MYCELIUM_TOKEN: "", ...env },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

describe("serve and demo --serve with an empty token", () => {
  it.each([
    [["serve", "--port", "0", "--token", ""], {}],
    [["serve", "--port", "0", "--token", "   "], {}],
    [["serve", "--port", "0"], { MYCELIUM_TOKEN: " \t" }],
    [["demo", "--serve", "--port", "0", "--token", ""], {}],
  ])(
    "%j is a usage error, never an API open to every scope",
    (args, env) => {
      const r = startBriefly(args, env)
      usage(r, /token is (empty|blank)|MYCELIUM_TOKEN is blank/)
      expect(r.out).not.toContain("listening")
      expect(r.err.trim().split("\n")[0]).toMatch(/^mycelium: /)
    },
    30_000,
  )
})

describe("--result-json keeps the numbers as typed or refuses them", () => {
  it.each([
    ["1e400", '{"a":1e400}'],
    ["-1e400", "[-1e400]"],
    ["12345678901234567890", '{"b":12345678901234567890}'],
    ["9007199254740993", "[9007199254740993]"],
    ["1e-400", "[1e-400]"],
    ["9007199254740993.0", '{"amount":9007199254740993.0}'],
  ])("%s: exit 2 naming the value, for transitions and tasks", (value, json) => {
    const common = ["--verified", "completed", "--by", "ops", "--reason", "r", "--result-json", json]
    for (const args of [
      ["transitions", "release", "r1", "--file", "l.json", ...common],
      ["tasks", "release", "r1", "--file", "t.json", ...common],
    ])
      usage(run(args), `--result-json number ${value} cannot be stored as typed`)
  })
  it("passes every value JSON.parse keeps exactly, and strings that only look like numbers", () => {
    const text =
      '{"s":"1e400 12345678901234567890","n":[-9007199254740992,9007199254740992,1.5e300,0e5,0.0,-0]}'
    expect(parseResultJson("x", text)).toEqual(JSON.parse(text))
    expect(() => parseResultJson("x", "{")).toThrow(/--result-json is not JSON/)
  })
  // A fraction or exponent once skipped the precision check: 9007199254740993.0 was stored as 9007199254740992.
  it.each([
    "9007199254740993.0",
    "12345678901234567891.5",
    "-12345678901234567891.5",
    "9007199254740993e0",
    "90071992547409930e-1",
    "0.10000000000000001",
    "1152921504606846976",
    "2e-324",
  ])("refuses %s, which a double does not keep as typed", (token) => {
    expect(() => parseResultJson("x", `{"amount":${token}}`)).toThrow(
      `--result-json number ${token} cannot be stored as typed`,
    )
  })
  it("keeps fractions and exponents a double writes back as typed", () => {
    const text = "[1.5,0.1,1e3,100.0,-0.25,1e-7,1E+2,5e-324,1.7976931348623157e308,12345678901234567000.0]"
    expect(parseResultJson("x", text)).toEqual(JSON.parse(text))
  })
})

describe("paths where a file belongs", () => {
  it("init refuses a dangling symlink (exit 1) and writes nothing through it", () => {
    const target = join(cwd, "elsewhere", "target.yaml")
    mkdirSync(join(cwd, "elsewhere"))
    symlinkSync(target, join(cwd, "dangling.yaml"))
    const r = run(["init", "-o", "dangling.yaml"])
    expect(r.code, r.err).toBe(1)
    expect(r.err).toContain("dangling.yaml is a symlink")
    expect(existsSync(target)).toBe(false)
  })
  it("init -o DIR --force and demo --ledger DIR are usage errors naming the directory", () => {
    mkdirSync(join(cwd, "adir"))
    usage(run(["init", "-o", "adir", "--force"]), "adir is a directory")
    usage(run(["demo", "--ledger", "adir"]), "adir is a directory")
  })
})

describe("a Redis URL that is not redis:// or rediss://", () => {
  it("is a usage error for transitions (flag and variable) as for tasks", () => {
    usage(
      run(["transitions", "list", "--redis-url", "http://127.0.0.1:1"]),
      "--redis-url must start with redis://",
    )
    usage(
      run(["transitions", "list"], { MYCELIUM_REDIS_URL: "http://127.0.0.1:1" }),
      "MYCELIUM_REDIS_URL must",
    )
    usage(run(["tasks", "list", "--redis-url", "http://127.0.0.1:1"]), "--redis-url must start with redis://")
    // The scheme is what matters, in any case, as the URL parser reads it.
    const up = run(["transitions", "list", "--redis-url", "REDIS://127.0.0.1:1"])
    expect(up.code).toBe(1)
    expect(up.err).toMatch(/127\.0\.0\.1:1/)
  })
})
