// Command lines that used to run as something else than what was typed: an empty --token serving with no auth, a
// --result-json number stored as another value, a write through a dangling symlink, a raw EISDIR or a Redis
// connection error where the mistake is the caller's. Each is now a one-line usage error (exit 2) or a refusal.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { parseResultJson } from "../../src/cli/options.ts"
import { ConfigError, loadConfigFromString } from "../../src/core/config/index.ts"
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
  it.each([
    ["newdir/", "newdir/mycelium.yaml"],
    ["newdir/sub/..", "newdir/mycelium.yaml"],
  ])(
    "init -o %s (a folder's name, missing) is a usage error saying -o takes a file path",
    (path, example) => {
      const r = run(["init", "-o", path])
      usage(r, `init: -o ${path} names a folder: -o takes a file path, e.g. ${example}`)
      expect(r.err.split("\n")[0]).toMatch(/^mycelium: init: -o /)
      expect(r.err).not.toMatch(/ENOENT|cannot open/)
      expect(existsSync(join(cwd, "newdir"))).toBe(false)
    },
  )
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

describe("transitions -c PATH", () => {
  it("lists as --config PATH does, not refused as an unknown subcommand", () => {
    const config = join(cwd, "short-c.yaml")
    const ledger = join(cwd, "short-c.json")
    writeFileSync(
      config,
      `transition: {agent_id: a, policy_version: v}\naction_ledger: {storage: file, path: ${ledger}, tools: [t]}\n` +
        "tools: {t: {side_effect_class: read}}\n",
    )
    const short = run(["transitions", "-c", config])
    const long = run(["transitions", "--config", config])
    expect([short.code, short.err]).toEqual([0, ""])
    expect(short.out).toContain(`in file ${ledger}`)
    expect(short.out).toBe(long.out)
    usage(run(["transitions", "-x"]), "transitions list: unknown option '-x'")
  })
})

// A malformed address passed the config load, the flag and variable checks and `doctor --no-connectivity`, then
// failed at the first call as `TypeError: Invalid URL` (exit 1) or, for Upstash, as an outage.
describe("a store URL its driver cannot read", () => {
  const NO_STORE_ENV = { MYCELIUM_LEDGER_FILE: "", MYCELIUM_REDIS_URL: "", MYCELIUM_POSTGRES_DSN: "" }
  const refused = (r: { code: number | null; err: string; out: string }, first: string): void => {
    usage(r, first)
    expect(r.err.split("\n")[0]).toContain(first)
    expect(r.err + r.out).not.toMatch(/S3CRET|TypeError|URIError|Invalid URL/)
  }
  const notUrl = "is not a valid URL: check the host and the port"
  it.each([
    [
      ["transitions", "list", "--redis-url", "redis://u:S3CRET@127.0.0.1:notaport"],
      {},
      `--redis-url ${notUrl}`,
    ],
    [["tasks", "list", "--redis-url", "redis://u:S3CRET@127.0.0.1:notaport"], {}, `--redis-url ${notUrl}`],
    [["transitions", "list"], { MYCELIUM_REDIS_URL: "redis://u:S3CRET@a b" }, `MYCELIUM_REDIS_URL ${notUrl}`],
    [
      ["transitions", "list", "--postgres-dsn", "postgres://a:S3CRET@127.0.0.1:notaport/db"],
      {},
      `--postgres-dsn ${notUrl}`,
    ],
    [
      ["tasks", "list", "--postgres-dsn", "postgres://a:S3CRET@127.0.0.1:notaport/db"],
      {},
      `--postgres-dsn ${notUrl}`,
    ],
    [
      ["transitions", "list"],
      { MYCELIUM_POSTGRES_DSN: "postgres://a:S3CRET@h/db%" },
      "MYCELIUM_POSTGRES_DSN holds a '%' not followed by two hex digits",
    ],
  ])("%j %j is a usage error naming the flag, not the URL", (args, env, first) => {
    refused(run(args, { ...NO_STORE_ENV, ...env }), first)
  })

  const cases: [string, string, string[], Record<string, string>, string][] = [
    [
      "redis",
      "transition: {agent_id: a, policy_version: v}\n" +
        'action_ledger: {storage: redis, url: "redis://u:S3CRET@127.0.0.1:notaport", tools: [t]}\n' +
        "tools: {t: {side_effect_class: read}}\n",
      ["transitions", "list"],
      {},
      `2:38 at 'action_ledger.url': 'url' ${notUrl}`,
    ],
    [
      "upstash",
      "transition: {agent_id: a, policy_version: v}\n" +
        'action_ledger: {storage: upstash, url: "ftp://x", token: t, tools: [t]}\n' +
        "tools: {t: {side_effect_class: read}}\n",
      ["transitions", "list"],
      {},
      "2:40 at 'action_ledger.url': 'url' must be an https:// URL",
    ],
    [
      "neon",
      "transition: {agent_id: a, policy_version: v}\n" +
        'action_ledger: {storage: neon, dsn: "postgres://a:S3CRET@127.0.0.1:notaport/db", tools: [t]}\n' +
        "tools: {t: {side_effect_class: read}}\n",
      ["transitions", "list"],
      {},
      `2:37 at 'action_ledger.dsn': 'dsn' ${notUrl}`,
    ],
    [
      "a task ledger's url_env",
      "task_ledger: {storage: redis, url_env: RURL, tasks: [x]}\n",
      ["tasks", "list"],
      { RURL: "redis://u:S3CRET@h:99999" },
      `1:40 at 'task_ledger.url_env': the value of environment variable 'RURL' ${notUrl}`,
    ],
    [
      "a tool's own postgres ledger",
      "transition: {agent_id: a, policy_version: v}\n" +
        'tools: {t: {side_effect_class: read, ledger: {storage: postgres, dsn: "postgres://u:S3CRET@h/db%"}}}\n',
      ["transitions", "list"],
      {},
      "2:71 at 'tools.t.ledger.dsn': 'dsn' holds a '%' not followed by two hex digits",
    ],
  ]
  it.each(cases)(
    "in mycelium.yaml (%s) is a ConfigError at its key, line and column, in doctor too",
    (name, yaml, args, env, where) => {
      const config = join(cwd, `bad-url-${name.replace(/\W+/g, "-")}.yaml`)
      writeFileSync(config, yaml)
      const first = `${config}:${where}`
      refused(run([...args, "-c", config], { ...NO_STORE_ENV, ...env }), first)
      refused(run(["doctor", "--no-connectivity", "-c", config], { ...NO_STORE_ENV, ...env }), first)
      expect(() => loadConfigFromString(yaml, { env })).toThrow(ConfigError)
    },
  )

  it.each([
    ["redis", "url", "redis://:p%40ss@127.0.0.1:6379/0"],
    ["redis", "url", "rediss://h"],
    ["upstash", "url", "http://127.0.0.1:8079"],
    ["postgres", "dsn", "postgres://u:p@/db?host=/run/postgresql"],
    ["postgres", "dsn", "postgres://u:p w@h:5432/db"],
    ["postgres", "dsn", "postgresql://u@[::1]:5432/db"],
    ["postgres", "dsn", "socket:/tmp?db=x"],
    ["neon", "dsn", "postgresql://u:p@ep-x.neon.tech/db?sslmode=verify-full"],
  ])("a %s %s its driver reads still loads (%s)", (storage, key, value) => {
    const token = storage === "upstash" ? ", token: t" : ""
    const yaml = `action_ledger: {storage: ${storage}, ${key}: ${JSON.stringify(value)}${token}}\n`
    expect(() => loadConfigFromString(yaml)).not.toThrow()
  })
})

// parseArgs keeps the last of a value flag given twice, silently: `release --verified completed ... --verified
// not-executed` recorded not_executed, and `--file a.json ... --file b.json` released the row in b.json. Every
// command refuses a repeated value flag (exit 2, nothing written); a repeated boolean flag says the same thing twice.
describe("a value flag given twice", () => {
  async function stuck(name: string): Promise<FileLedgerStorage> {
    const storage = new FileLedgerStorage(join(cwd, name))
    const t = Date.now() / 1000
    await storage.set({
      ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: t - 1 }, t - 5),
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
    })
    return storage
  }
  const WHO = ["--by", "ops", "--reason", "provider says paid", "--override-death-signal", "host gone"]
  const resolution = async (s: FileLedgerStorage) => (await s.get("pay:1"))?.operatorResolution ?? null

  it("--verified completed ... --verified not-executed: refused, nothing released", async () => {
    const a = await stuck("twice-a.json")
    const r = run([
      "transitions",
      "release",
      "pay:1",
      "--file",
      "twice-a.json",
      "--verified",
      "completed",
      ...WHO,
      "--verified",
      "not-executed",
    ])
    usage(r, /^mycelium: transitions release: --verified given twice/)
    expect(await resolution(a)).toBeNull()
  })

  it("--file a ... --file=b, -c a --config b: refused, neither store touched", async () => {
    const a = await stuck("twice-a2.json")
    const b = await stuck("twice-b2.json")
    const r = run([
      "release",
      "pay:1",
      "--file",
      "twice-a2.json",
      "--verified",
      "not-executed",
      ...WHO,
      "--file=twice-b2.json",
    ])
    usage(r, /^mycelium: release: --file given twice/)
    expect([await resolution(a), await resolution(b)]).toEqual([null, null])
    usage(
      run(["transitions", "list", "-c", "a.yaml", "--config", "b.yaml"]),
      /transitions list: --config given twice/,
    )
  })

  it.each([
    [
      ["tasks", "release", "x", "--verified", "completed", "--by", "a", "--by", "b", "--reason", "r"],
      "tasks release",
      "by",
    ],
    [
      ["transitions", "mark-dead", "x", "--by", "a", "--reason", "r", "--reason", "s"],
      "transitions mark-dead",
      "reason",
    ],
    [
      ["receipts", "export", "--url", "http://127.0.0.1:1", "--url", "http://127.0.0.1:2"],
      "receipts export",
      "url",
    ],
    [["receipts", "verify", "--key-env", "A", "--key-env", "B"], "receipts verify", "key-env"],
    [["init", "-o", "a.yaml", "-o", "b.yaml"], "init", "output"],
    [["doctor", "--timeout", "1", "--timeout", "2"], "doctor", "timeout"],
    [["serve", "--port", "0", "--port", "0"], "serve", "port"],
    [["demo", "--store", "memory", "--store", "file"], "demo", "store"],
  ])("%j", (args, command, flag) => {
    usage(startBriefly(args), `mycelium: ${command}: --${flag} given twice`)
  })

  it("a boolean flag given twice is still taken", async () => {
    await stuck("twice-list.json")
    const r = run(["transitions", "list", "--file", "twice-list.json", "--json", "--json"])
    expect(r.code, r.err).toBe(0)
    expect(JSON.parse(r.out)).toHaveLength(1)
  })
})
