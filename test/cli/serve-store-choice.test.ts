// `mycelium serve` takes its ledger file by the operator commands' rules: --ledger, else MYCELIUM_LEDGER_FILE (a
// store flag, -c included, beats every variable), else the config's file, else .mycelium/ledger.json. It ignored
// the variable, so with MYCELIUM_LEDGER_FILE exported `transitions list` showed one ledger's stuck row while the API
// answered (and settled releases) on another, and it had no --python-lock for a file Python workers write.
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { serveOnFreePort } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-serve-store-"))
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) c.kill("SIGKILL")
  rmSync(cwd, { recursive: true, force: true })
})
// Killed after 20 s: a serve that starts where it should have refused shows as a null exit code.
const run = cliRunner(cwd, { timeout: 20_000 })
const NO_ENV = {
  MYCELIUM_TOKEN: "",
  MYCELIUM_LEDGER_FILE: "",
  MYCELIUM_REDIS_URL: "",
  MYCELIUM_POSTGRES_DSN: "",
}

/** A stuck row `id` in `file` (relative to cwd): an operator's release settles it. */
async function stuck(file: string, id: string): Promise<void> {
  const now = Date.now() / 1000
  await new FileLedgerStorage(join(cwd, file)).set({
    ...newEntry({ requestId: id, tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 10 }, now - 50),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
}

const config = (path: string, lock = false) => `transition:
  agent_id: a
  policy_version: "1"
  reclaim_requires_death_signal: false
action_ledger:
  storage: file
  path: ${path}${lock ? "\n  python_lock: true" : ""}
  tools: [pay]
tools:
  pay:
    side_effect_class: non_idempotent_mutate
`

async function servedIds(args: string[], env: Record<string, string>): Promise<string[]> {
  const port = await serveOnFreePort(children, args, { cwd, env: { ...NO_ENV, ...env } })
  const r = await fetch(`http://127.0.0.1:${port}/v1/transitions`)
  expect(r.status).toBe(200)
  const body = (await r.json()) as { transitions: { request_id: string }[] }
  return body.transitions.map((t) => t.request_id).sort()
}

/** What `transitions list` shows under the same flags and environment: the ids, one a line. */
function listedIds(args: string[], env: Record<string, string>): string[] {
  const r = run(["transitions", "list", ...args], { ...NO_ENV, ...env })
  expect(r.code, r.err).toBe(0)
  return r.out
    .trim()
    .split("\n")
    .map((l) => l.split(" ")[0] as string)
    .sort()
}

beforeAll(async () => {
  mkdirSync(join(cwd, ".mycelium"))
  await stuck(".mycelium/ledger.json", "pay:default")
  await stuck("env.json", "pay:env")
  await stuck("flag.json", "pay:flag")
  await stuck("prod.json", "pay:config")
  writeFileSync(join(cwd, "prod.yaml"), config("prod.json"))
})

describe("serve serves the file transitions lists", () => {
  it.each([
    ["MYCELIUM_LEDGER_FILE over the default", [], { MYCELIUM_LEDGER_FILE: "env.json" }, ["pay:env"]],
    [
      "--ledger over the variable",
      ["--ledger", "flag.json"],
      { MYCELIUM_LEDGER_FILE: "env.json" },
      ["pay:flag"],
    ],
    ["-c over the variable", ["-c", "prod.yaml"], { MYCELIUM_LEDGER_FILE: "env.json" }, ["pay:config"]],
    ["the default without either", [], {}, ["pay:default"]],
  ])(
    "%s",
    async (_what, args, env, ids) => {
      // `--file PATH` there is `--ledger PATH` here.
      const listArgs = args[0] === "--ledger" ? ["--file", ...args.slice(1)] : args
      expect(listedIds(listArgs, env)).toEqual(ids)
      expect(await servedIds(args, env)).toEqual(ids)
    },
    40_000,
  )

  it("an exported variable beats the implicit ./mycelium.yaml, as for transitions", async () => {
    const dir = join(cwd, "implicit")
    mkdirSync(dir)
    writeFileSync(join(dir, "mycelium.yaml"), config("../prod.json"))
    const env = { ...NO_ENV, MYCELIUM_LEDGER_FILE: "../env.json" }
    const port = await serveOnFreePort(children, [], { cwd: dir, env })
    const r = await fetch(`http://127.0.0.1:${port}/v1/transitions`)
    expect(JSON.stringify(await r.json())).toContain("pay:env")
  }, 40_000)
})

describe("--python-lock, as the operator commands take it", () => {
  it("takes the flock on the variable's file: a release waits for a Python worker holding it", async () => {
    await stuck("py-env.json", "pay:py")
    const port = await serveOnFreePort(children, ["--python-lock"], {
      cwd,
      env: { ...NO_ENV, MYCELIUM_LEDGER_FILE: "py-env.json" },
    })
    // It lets go when the test says, not after a fixed time a loaded machine could spend handing the release over.
    const holder = spawn("flock", ["-o", join(cwd, "py-env.json.lock"), "sh", "-c", "echo held; read go"])
    children.push(holder)
    await new Promise<void>((r) => holder.stdout.once("data", () => r()))
    let letGo = false
    const answered = fetch(`http://127.0.0.1:${port}/v1/transitions/pay:py/release`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ verified: "completed", reason: "charge found", result: { id: "pi_1" } }),
    }).then((r) => ({ r, beforeLetGo: !letGo }))
    // Time for a release that ignores the flock to answer; one that waits for it cannot answer before the holder goes.
    await new Promise((r) => setTimeout(r, 500))
    letGo = true
    holder.stdin.end("go\n")
    const { r, beforeLetGo } = await answered
    expect(r.status, await r.text()).toBe(200)
    expect(beforeLetGo).toBe(false)
  }, 40_000)

  it("is accepted with --ledger", async () => {
    expect(await servedIds(["--ledger", "flag.json", "--python-lock"], {})).toEqual(["pay:flag"])
  }, 40_000)
})

describe("conflicting or unservable choices are usage errors (exit 2), as for transitions", () => {
  it.each([
    ["--python-lock without a ledger file", ["--python-lock"], {}, /--python-lock applies to a ledger file/],
    [
      "--python-lock with -c (the config sets python_lock)",
      ["-c", "prod.yaml", "--python-lock"],
      { MYCELIUM_LEDGER_FILE: "env.json" },
      /--python-lock applies to a ledger file.*in mycelium\.yaml set python_lock: true/,
    ],
    [
      "a Redis store the environment names",
      [],
      { MYCELIUM_REDIS_URL: "redis://ops:S3CRET@127.0.0.1:1" },
      /serve serves a ledger file; MYCELIUM_REDIS_URL names redis redis:\/\/ops:\*\*\*@127\.0\.0\.1:1: pass --ledger PATH/,
    ],
    [
      "a Postgres store the environment names",
      [],
      { MYCELIUM_POSTGRES_DSN: "postgres://u@127.0.0.1:1/db" },
      /serve serves a ledger file; MYCELIUM_POSTGRES_DSN names postgres/,
    ],
    [
      "a variable naming a directory",
      [],
      { MYCELIUM_LEDGER_FILE: ".mycelium" },
      /MYCELIUM_LEDGER_FILE \.mycelium is a directory: pass a file/,
    ],
    [
      "a variable's Redis URL of another scheme",
      [],
      { MYCELIUM_REDIS_URL: "http://127.0.0.1:1" },
      /MYCELIUM_REDIS_URL must start with redis:\/\//,
    ],
  ])("%s", (_what, args, env, text) => {
    const r = run(["serve", "--port", "0", ...args], { ...NO_ENV, ...env })
    expect([r.code, r.err.split("\n")[0]], r.out).toEqual([2, expect.stringMatching(text)])
    expect(r.out).not.toContain("listening")
    expect(r.err).not.toContain("S3CRET")
    // transitions refuses the same choice the same way.
    const list = run(["transitions", "list", ...args], { ...NO_ENV, ...env })
    if (!/serve serves/.test(String(text))) expect(list.code).toBe(2)
  })

  it("a config that ledgers no tool, as transitions refuses it: serve served the default file's rows", () => {
    const dir = join(cwd, "no-tool")
    mkdirSync(join(dir, ".mycelium"), { recursive: true })
    writeFileSync(join(dir, ".mycelium", "ledger.json"), "{}")
    writeFileSync(join(dir, "mycelium.yaml"), "task_ledger:\n  storage: file\n  path: tasks.json\n")
    const inDir = cliRunner(dir, { timeout: 20_000 })
    const r = inDir(["serve", "--port", "0"], NO_ENV)
    expect([r.code, r.err.split("\n")[0]], r.out).toEqual([
      2,
      "mycelium: mycelium.yaml ledgers no tool: add action_ledger.tools, or pass --ledger PATH",
    ])
    expect(r.out).not.toContain("listening")
    expect(inDir(["transitions", "list"], NO_ENV).code).toBe(2)
  })

  it("--python-lock shows in the help", () => {
    expect(run(["serve", "--help"]).out).toContain("--python-lock")
  })
})
