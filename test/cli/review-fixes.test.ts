// Command lines that did something else than what was asked: a demo that erased a real ledger, a `-c` ignored beside
// a store flag (an unsigned release), a password in a DSN's query printed, a lease's C1 controls printed raw, an
// unreadable config as a raw Node error, `--verified constructor` read off the prototype, colour codes printed as
// text, and `init --force` writing through a symlink.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { redact } from "../../src/cli/ledger-access.ts"
import { ConfigError } from "../../src/core/config/index.ts"
import { TaskLedger } from "../../src/core/tasks/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-review-fixes-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

/** A ledger file holding one payment that crashed after charging: UNKNOWN, waiting for an operator. */
async function unknownPayment(path: string): Promise<FileLedgerStorage> {
  const storage = new FileLedgerStorage(path)
  const now = Date.now() / 1000
  await storage.set({
    ...newEntry(
      { requestId: "pay:1", tool: "send_payment", owner: "w1", fence: 1, leaseUntil: now - 1 },
      now - 5,
    ),
    kwargs: { amount: 100, tool_call_id: "call_1" },
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
  return storage
}

describe("mycelium demo --ledger PATH", () => {
  it("refuses (exit 2) a file holding rows the demo did not write, or no ledger, and keeps it", async () => {
    mkdirSync(join(cwd, "real"))
    const storage = await unknownPayment(join(cwd, "real", "ledger.json"))
    const r = run(["demo", "--ledger", "real/ledger.json"])
    expect(r.code, r.err).toBe(2)
    expect(r.err).toMatch(/not a demo ledger.*pass --ledger a new path/)
    expect((await storage.get("pay:1"))?.terminalOutcome).toBe("UNKNOWN")
    writeFileSync(join(cwd, "real", "notes.txt"), "not json")
    expect(run(["demo", "--ledger", "real/notes.txt"]).code).toBe(2)
    expect(readFileSync(join(cwd, "real", "notes.txt"), "utf8")).toBe("not json")
  }, 60_000)

  it("rewrites its own ledger on a second run", () => {
    expect(run(["demo", "--ledger", "demo/l.json"]).code).toBe(0)
    const again = run(["demo", "--ledger", "demo/l.json"])
    expect(again.code, again.err).toBe(0)
  }, 60_000)
})

describe("mycelium tasks with a store flag and -c", () => {
  it("takes the store from the flag and the receipt signing from the config; a missing -c is exit 2", async () => {
    const dir = join(cwd, "sign")
    mkdirSync(dir)
    const yaml = join(dir, "mycelium.yaml")
    writeFileSync(
      yaml,
      `transition: {agent_id: cfg, policy_version: v1}\ntask_ledger: {storage: file, path: ${dir}/tasks.json}\n` +
        `tasks:\n  import_batch: {id_from: [b]}\naudit_receipt: {signing_key_env: REVIEW_KEY, storage: file, path: ${dir}/receipts.jsonl}\n`,
    )
    process.env.REVIEW_KEY = "k"
    const config = await loadConfig(yaml)
    const job = config.applyTask("import_batch", async (_a: { b: string }) => {
      throw new Error("boom")
    })
    await job({ b: "b1" }).catch(() => {})
    await config.close()
    const lines = () => readFileSync(join(dir, "receipts.jsonl"), "utf8").trim().split("\n").length
    const before = lines()
    const r = run(
      ["tasks", "release", "import_batch:b=b1", "--file", `${dir}/tasks.json`, "-c", yaml].concat([
        "--verified",
        "not-executed",
        "--by",
        "ops",
        "--reason",
        "r",
      ]),
      { REVIEW_KEY: "k" },
    )
    expect(r.code, r.err).toBe(0)
    expect(lines()).toBe(before + 1)
    writeFileSync(join(cwd, "t.json"), "{}")
    const missing = run(["tasks", "list", "--file", "t.json", "-c", "/nonexistent.yaml"])
    expect(missing.code, missing.out).toBe(2)
    expect(missing.err).toContain("config file not found")
  }, 60_000)
})

describe("passwords in store URLs and DSNs", () => {
  it.each([
    ["postgres://app@127.0.0.1:5433/app?password=app", "postgres://app@127.0.0.1:5433/app?password=***"],
    [
      "postgres://u:pw@h/db?sslmode=require&PassWord=x&pwd=y&sslpassword=z",
      "postgres://u:***@h/db?sslmode=require&PassWord=***&pwd=***&sslpassword=***",
    ],
    ["redis://h:6379/0?Token=t", "redis://h:6379/0?Token=***"],
    ["host=db user=u password=s3cret dbname=x", "host=db user=u password=*** dbname=x"],
    ["host=db PASSWORD = 'a b' port=1", "host=db PASSWORD = *** port=1"],
    ["postgres://h/db?application_name=app", "postgres://h/db?application_name=app"],
  ])("%s prints as %s", (url, shown) => {
    expect(redact(url)).toBe(shown)
  })

  it("doctor prints a ?password= query parameter as ***", () => {
    writeFileSync(
      join(cwd, "pg.yaml"),
      "action_ledger:\n  storage: postgres\n  dsn: postgres://app@127.0.0.1:1/app?password=s3cret\n  tools: [pay]\n",
    )
    const r = run(["doctor", "-c", "pg.yaml", "--timeout", "1"])
    expect(r.out).toContain("password=***")
    expect(r.out + r.err).not.toContain("s3cret")
  }, 30_000)
})

it("tasks show prints a lease's C1 control characters escaped", async () => {
  const path = join(cwd, "c1-tasks.json")
  const ledger = new TaskLedger({
    storage: new FileTaskStore(path),
    owner: "evil\u009b2J\u009d0;owned\u009c",
  })
  const job = ledger.task<{ b: string }, string>({ name: "import_batch", idFrom: ["b"] }, async () => {
    throw new Error("boom")
  })
  await job({ b: "b1" }).catch(() => {})
  const r = run(["tasks", "show", "import_batch:b=b1", "--file", path])
  expect(r.code, r.err).toBe(0)
  expect(r.out).toContain("evil\\x9b2J\\x9d0;owned\\x9c")
  expect(r.out).not.toMatch(/[\u0080-\u009f]/)
})

describe("a config path that cannot be read", () => {
  it("is a ConfigError naming the path and the reason; doctor exits 2", async () => {
    writeFileSync(join(cwd, "afile"), "x")
    symlinkSync("loop2", join(cwd, "loop1"))
    symlinkSync("loop1", join(cwd, "loop2"))
    for (const [path, reason] of [
      ["afile/mycelium.yaml", "ENOTDIR"],
      ["loop1", "ELOOP"],
    ]) {
      const r = run(["doctor", "-c", path as string])
      expect(r.code, r.err).toBe(2)
      expect(r.err).toContain(`${path}: cannot read the config file: ${reason}`)
      await expect(loadConfig(join(cwd, path as string))).rejects.toBeInstanceOf(ConfigError)
    }
  }, 60_000)
})

it.each(["constructor", "toString", "__proto__"])(
  "transitions release --verified %s is a usage error (exit 2)",
  (verdict) => {
    const r = run([
      "transitions",
      "release",
      "x",
      "--verified",
      verdict,
      "--by",
      "o",
      "--reason",
      "r",
      "--file",
      "l.json",
    ])
    expect(r.code, r.err).toBe(2)
    expect(r.err).toContain("--verified must be completed or not-executed")
  },
)

it("transitions show paints the outcome once at a colour terminal, never prints its codes as text", async () => {
  await unknownPayment(join(cwd, "colour.json"))
  const r = run(["transitions", "show", "pay:1", "--file", "colour.json"], { NO_COLOR: "", FORCE_COLOR: "1" })
  expect(r.code, r.err).toBe(0)
  expect(r.out).toContain("resolved_outcome: \u001b[31mUNKNOWN\u001b[39m")
  expect(r.out).not.toContain("\\x1b")
})

describe("init --force and a symlink", () => {
  it("refuses to write through a symlink, dangling or not (exit 1), and leaves its target alone", () => {
    mkdirSync(join(cwd, "outside"))
    writeFileSync(join(cwd, "outside", "kept.txt"), "mine")
    symlinkSync(join(cwd, "outside", "victim.txt"), join(cwd, "dangling.yaml"))
    symlinkSync(join(cwd, "outside", "kept.txt"), join(cwd, "link.yaml"))
    for (const link of ["dangling.yaml", "link.yaml"]) {
      const r = run(["init", "-o", link, "--force"])
      expect(r.code, r.err).toBe(1)
      expect(r.err).toContain(`${link} is a symlink`)
    }
    expect(existsSync(join(cwd, "outside", "victim.txt"))).toBe(false)
    expect(readFileSync(join(cwd, "outside", "kept.txt"), "utf8")).toBe("mine")
  }, 60_000)
})
