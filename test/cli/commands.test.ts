// Every command as a subprocess: output, --json shape, exit codes, bad input. Operator flows run against the real
// file, Redis and PostgreSQL stores named in a mycelium.yaml.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { RespConnection } from "../../src/adapters/redis.ts"
import { loadConfigFromString } from "../../src/core/config/index.ts"
import { nodeStorageFactory } from "../../src/node/config.ts"
import { DATABASE_URL, dropLedgerTable, runTag } from "../adapters/servers/env.ts"
import { type Closers, silentTcp } from "../adapters/servers/stall.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-cmd-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const run = cliRunner(cwd)
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /)

describe("mycelium --version and --help on every command", () => {
  it("--version prints the package version", () => {
    const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { version: string }
    expect(run(["--version"])).toMatchObject({ code: 0, out: `${pkg.version}\n` })
  })
  it.each(["init", "demo", "transitions", "doctor", "serve", "release"])(
    "%s --help exits 0 with usage",
    (cmd) => {
      const r = run([cmd, "--help"])
      expect(r.code).toBe(0)
      expect(r.out).toContain(`mycelium ${cmd}`)
    },
  )
})

describe("mycelium init", () => {
  it.each([
    [[], "quickstart"],
    [["--minimal"], "minimal"],
    [["--full"], "full"],
    [["--full", "--minimal"], "full"],
  ])("init %j writes the %s template, which doctor accepts", (flags, name) => {
    const out = join(cwd, `init-${name}-${flags.length}.yaml`)
    const r = run(["init", "-o", out, ...flags])
    expect(r.code).toBe(0)
    expect(r.out).toContain(`Wrote ${out} (${name} template)`)
    const doctor = run(["doctor", "-c", out, "--no-connectivity", "--json"], { MYCELIUM_SIGNING_KEY: "k" })
    expect(doctor.code, doctor.err).toBe(0)
    expect(JSON.parse(doctor.out)[0]).toMatchObject({ id: "config.load", status: "PASS" })
  })
  it("refuses to overwrite without --force (exit 1), overwrites with it", () => {
    const out = join(cwd, "exists.yaml")
    writeFileSync(out, "# mine\n")
    expect(run(["init", "-o", out])).toMatchObject({ code: 1 })
    expect(readFileSync(out, "utf8")).toBe("# mine\n")
    expect(run(["init", "-o", out, "--force"]).code).toBe(0)
    expect(readFileSync(out, "utf8")).toContain("subagent_task")
  })
  it("rejects stray arguments (exit 2)", () => {
    const r = run(["init", "extra"])
    expect(r.code).toBe(2)
    expect(r.err).toContain("init takes no arguments")
  })
})

describe("mycelium demo", () => {
  it("shows 2 unguarded executions, 1 guarded with a waiting poller, a hard block and one re-run; exit 0", () => {
    const r = run(["demo", "--store", "memory"])
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain("unguarded executions: 2")
    expect(r.out).toContain("[POLL] redispatch sees")
    expect(r.out).toContain("guarded executions: 1")
    expect(r.out).toContain("redispatch -> LedgerHardBlockError")
    expect(r.out).toContain("re-runs after release: 1")
    expect(r.out).toMatch(/receipts verified: ([1-9]\d*) of \1 \(HMAC signature and hash chain\)/)
    // The crashed call ended UNKNOWN, which gets no receipt: the one for send_payment before its re-run is the release.
    expect(r.out).toMatch(/send_payment +failed \(operator release\)\n.*send_payment +completed\n/)
    expect(r.out).not.toContain("\u001b[")
  })
  it("rejects an unknown store (exit 2)", () => {
    expect(run(["demo", "--store", "mongo"])).toMatchObject({ code: 2 })
  })
})

describe("store selection", () => {
  it("a --file flag beats MYCELIUM_LEDGER_FILE, and the variable applies without a flag", () => {
    const flagged = join(cwd, "flagged.json")
    const fromEnvFile = join(cwd, "from-env.json")
    const r = run(["transitions", "list", "--file", flagged], { MYCELIUM_LEDGER_FILE: fromEnvFile })
    expect(r.out).toContain(`in file ${flagged}`)
    const fromEnv = run(["transitions", "list"], { MYCELIUM_LEDGER_FILE: fromEnvFile })
    expect(fromEnv.out).toContain(`in file ${fromEnvFile}`)
  })
  it("a --redis-url flag beats MYCELIUM_LEDGER_FILE", () => {
    const r = run(["transitions", "list", "--redis-url", REDIS_URL, "--prefix", `sel-${runTag("s")}:`], {
      MYCELIUM_LEDGER_FILE: join(cwd, "from-env.json"),
    })
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain("in redis redis://")
  })
  it("tasks: a --redis-url flag beats MYCELIUM_TASK_FILE, and the variable applies without a flag", () => {
    const fromEnvFile = join(cwd, "tasks-from-env.json")
    const r = run(["tasks", "list", "--redis-url", REDIS_URL, "--prefix", `tsel-${runTag("s")}:`], {
      MYCELIUM_TASK_FILE: fromEnvFile,
    })
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain("in redis redis://")
    const fromEnv = run(["tasks", "list"], { MYCELIUM_TASK_FILE: fromEnvFile })
    expect(fromEnv.out).toContain(`in file ${fromEnvFile}`)
  })
  it("an explicit -c beats the variables too: an exported file cannot redirect an operator to another store", () => {
    const dir = mkdtempSync(join(cwd, "explicit-c-"))
    const configured = join(dir, "configured.json")
    const tasksConfigured = join(dir, "tasks-configured.json")
    const config = join(dir, "mycelium.yaml")
    writeFileSync(
      config,
      `transition:\n  agent_id: a\n  policy_version: v1\naction_ledger:\n  storage: file\n  path: ${configured}\n` +
        `  tools: [t]\ntools:\n  t:\n    side_effect_class: read\ntask_ledger:\n  storage: file\n  path: ${tasksConfigured}\n` +
        "tasks:\n  nightly:\n    ledger: true\n",
    )
    const env = {
      MYCELIUM_LEDGER_FILE: join(dir, "env.json"),
      MYCELIUM_TASK_FILE: join(dir, "tasks-env.json"),
    }
    const t = run(["transitions", "list", "-c", config], env)
    expect([t.code, t.out]).toEqual([0, expect.stringContaining(`in file ${configured}`)])
    const k = run(["tasks", "list", "-c", config], env)
    expect([k.code, k.out]).toEqual([0, expect.stringContaining(`in file ${tasksConfigured}`)])
  })
})

describe("mycelium doctor", () => {
  it("a broken config exits 2 naming the key, line and column", () => {
    const path = join(cwd, "broken.yaml")
    writeFileSync(path, "action_ledger:\n  storage: file\n  pth: x\n")
    const r = run(["doctor", "-c", path])
    expect(r.code).toBe(2)
    expect(r.err).toContain(`${path}:3:3 at 'action_ledger.pth': unknown key 'pth'`)
    noStack(r.err)
  })
  it("an unreachable store fails (exit 1) and says why; --json lists every check", () => {
    const path = join(cwd, "down.yaml")
    writeFileSync(
      path,
      "transition: {agent_id: a, policy_version: v}\naction_ledger: {storage: redis, url: 'redis://127.0.0.1:1', tools: [t]}\ntools: {t: {side_effect_class: read}}\n",
    )
    const r = run(["doctor", "-c", path, "--json", "--timeout", "1"])
    expect(r.code).toBe(1)
    const checks = JSON.parse(r.out) as Array<{ id: string; status: string; message: string }>
    expect(checks.find((c) => c.id.startsWith("ledger.connectivity"))).toMatchObject({ status: "FAIL" })
  })
  // The probe gives up after --timeout; the store it opened must not keep the process alive past it (its own limit,
  // 30 s for postgres and 5 s for redis by default, would).
  it.each([
    ["postgres", (port: number) => `{storage: postgres, dsn: 'postgres://app:app@127.0.0.1:${port}/app'`],
    ["redis (with a password)", (port: number) => `{storage: redis, url: 'redis://:pw@127.0.0.1:${port}'`],
  ])(
    "%s that never answers: FAIL within --timeout, and the process exits then",
    async (_, store) => {
      const closers: Closers = []
      try {
        const path = join(cwd, `silent-${Math.random().toString(36).slice(2)}.yaml`)
        writeFileSync(
          path,
          `transition: {agent_id: a, policy_version: v}\naction_ledger: ${store(await silentTcp(closers))}, tools: [t]}\ntools: {t: {side_effect_class: read}}\n`,
        )
        // The CLI's start-up, timed on the same config without the probe: on a loaded machine it alone takes seconds,
        // and the bound below is on what the probe adds (1 s, against the store's own 5 s or 30 s).
        const bare = Date.now()
        run(["doctor", "-c", path, "--json", "--no-connectivity"])
        const startup = Date.now() - bare
        const started = Date.now()
        const r = run(["doctor", "-c", path, "--json", "--timeout", "1"])
        const ms = Date.now() - started - startup
        expect(r.code, r.err).toBe(1)
        const checks = JSON.parse(r.out) as Array<{ id: string; status: string; message: string }>
        expect(checks.filter((c) => c.id.startsWith("ledger.connectivity"))).toMatchObject([
          { status: "FAIL" },
        ])
        expect(ms).toBeLessThan(4500)
      } finally {
        for (const close of closers) await close()
      }
    },
    60_000,
  )
  it("warns when a Python worker has written a file store (its <path>.lock) that lacks python_lock", () => {
    const path = join(cwd, "py-shared.yaml")
    const ledger = join(cwd, "py-shared.json")
    const yaml = (lock: string) =>
      `transition: {agent_id: a, policy_version: v, reclaim_requires_death_signal: true}\n` +
      `action_ledger: {storage: file, path: ${ledger}${lock}, tools: [t]}\ntools: {t: {side_effect_class: read}}\n`
    writeFileSync(path, yaml(""))
    const id = `file.python_lock(${ledger})`
    const before = JSON.parse(run(["doctor", "-c", path, "--json"]).out) as Array<{ id: string }>
    expect(before.map((c) => c.id)).not.toContain(id)
    writeFileSync(`${ledger}.lock`, "") // what the original's flock leaves beside the file
    const r = run(["doctor", "-c", path, "--json"])
    const checks = JSON.parse(r.out) as Array<{ id: string; status: string; message: string }>
    expect(checks.find((c) => c.id === id)).toMatchObject({
      status: "WARN",
      message: expect.stringContaining("set python_lock: true"),
    })
    expect(run(["doctor", "-c", path, "--strict"]).code).toBe(1)
    writeFileSync(path, yaml(", python_lock: true"))
    const after = JSON.parse(run(["doctor", "-c", path, "--json"]).out) as Array<{ id: string }>
    expect(after.map((c) => c.id)).not.toContain(id)
  })
  it("warns when a Python worker claimed rows on a Redis ledger without dispatch_lookup: scan", async () => {
    const prefix = `doctor-${runTag("py")}:action:`
    const conn = new RespConnection(REDIS_URL)
    // A row as the original's RedisLedgerStorage writes it: its owner is `{hostname}:{pid}`.
    await conn.command(
      "SET",
      `${prefix}py-row`,
      JSON.stringify({
        request_id: "py-row",
        tool: "t",
        args: [],
        kwargs: { tool_call_id: "c" },
        status: "completed",
        terminal_outcome: "COMPLETED",
        fence: 1,
        result: 1,
        error: null,
        started_at: 1767225600.5,
        finished_at: 1767225601.5,
        lease_until: null,
        owner: "worker-7:4242",
      }),
    )
    try {
      const path = join(cwd, "py-redis.yaml")
      const yaml = (extra: string) =>
        `transition: {agent_id: a, policy_version: v, reclaim_requires_death_signal: true}\n` +
        `action_ledger: {storage: redis, url: '${REDIS_URL}', prefix: '${prefix}'${extra}, tools: [t]}\n` +
        `tools: {t: {side_effect_class: read}}\n`
      writeFileSync(path, yaml(""))
      const checks = JSON.parse(run(["doctor", "-c", path, "--json"]).out) as Array<Record<string, string>>
      expect(checks.find((c) => c.id?.startsWith("ledger.dispatch_lookup"))).toMatchObject({
        status: "WARN",
        message: expect.stringContaining("owner worker-7:4242"),
      })
      writeFileSync(path, yaml(", dispatch_lookup: scan"))
      const after = JSON.parse(run(["doctor", "-c", path, "--json"]).out) as Array<Record<string, string>>
      expect(after.filter((c) => c.id?.startsWith("ledger.dispatch_lookup"))).toEqual([])
      expect(after.find((c) => c.id?.startsWith("ledger.connectivity"))).toMatchObject({ status: "PASS" })
    } finally {
      await conn.command("DEL", `${prefix}py-row`)
      conn.close()
    }
  })
  it("--strict turns warnings into a failure", () => {
    const path = join(cwd, "warn.yaml")
    writeFileSync(
      path,
      "transition: {agent_id: a, policy_version: v, reclaim_requires_death_signal: false}\naction_ledger: {storage: file, path: l.json, tools: [t]}\ntools: {t: {side_effect_class: payment}}\n",
    )
    expect(run(["doctor", "-c", path]).code).toBe(0)
    expect(run(["doctor", "-c", path, "--strict"]).code).toBe(1)
  })
})

// A stuck payment on the configured store: claimed, crashed inside sideEffect(), redispatched into a hard block.
async function strandPayment(configText: string, env: Record<string, string>, callId: string) {
  const config = loadConfigFromString(configText, {
    env,
    storageFactory: nodeStorageFactory,
    onWarning: () => {},
  })
  let runs = 0
  const pay = config.apply("pay", async (_a: { amount: number }, tx) =>
    tx.sideEffect(async () => {
      runs++
      if (runs === 1) throw new Error("connection reset")
      return { ok: runs }
    }),
  )
  await pay({ amount: 1 }, { toolCallId: callId }).catch(() => {})
  await pay({ amount: 1 }, { toolCallId: callId }).catch(() => {})
  return { pay, runs: () => runs, close: async () => (await config.ledgerFor("pay"))?.storage.close?.() }
}

const table = `cli_ledger_${runTag("t").replaceAll("-", "_")}`
afterAll(async () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL })
  await dropLedgerTable(pool, table)
  await pool.end()
})

describe.each([
  ["file", () => `storage: file\n  path: ${join(cwd, "ops-ledger.json")}`],
  ["redis", () => `storage: redis\n  url_env: R_URL\n  prefix: "cli-${runTag("r")}:"`],
  ["postgres", () => `storage: postgres\n  dsn_env: PG_DSN\n  table: ${table}`],
])("operator flow from the CLI on %s, configured in mycelium.yaml", (kind, storage) => {
  it("lists the stuck call, shows it, refuses bad verdicts, releases it once, and the redispatch runs once", async () => {
    if (kind === "postgres") {
      const pool = new pg.Pool({ connectionString: DATABASE_URL })
      await new NeonLedgerStorage({ pool, table }).migrate()
      await pool.end()
    }
    const env = { R_URL: REDIS_URL, PG_DSN: DATABASE_URL }
    const text = `transition: {agent_id: ops, policy_version: v1}\naction_ledger:\n  ${storage()}\n  tools: [pay]\ntools:\n  pay: {side_effect_class: non_idempotent_mutate}\n`
    const cfg = join(cwd, `ops-${kind}.yaml`)
    writeFileSync(cfg, text)
    const callId = `call-${runTag(kind)}`
    const stranded = await strandPayment(text, env, callId)
    expect(stranded.runs()).toBe(1)

    const list = run(["transitions", "list", "--stuck", "-c", cfg, "--json"], env)
    expect(list.code, list.err).toBe(0)
    const rows = JSON.parse(list.out) as Array<Record<string, unknown>>
    const stuck = rows.find((r) => r.tool === "pay")
    expect(stuck).toMatchObject({ resolved_outcome: expect.stringMatching(/^(BLOCKED|UNKNOWN)$/) })
    const id = stuck?.request_id as string

    const text1 = run(["transitions", "list", "--stuck", "-c", cfg], env)
    expect(text1.out).toContain(id)
    expect(text1.out).toMatch(/next: .*verify with the provider/)
    const show = run(["transitions", "show", id, "-c", cfg, "--json"], env)
    expect(JSON.parse(show.out)).toMatchObject({ request_id: id, tool: "pay" })

    expect(
      run(["transitions", "release", id, "-c", cfg, "--verified", "not-executed", "--by", "ops"], env).code,
    ).toBe(2)
    const withResult = ["--verified", "not-executed", "--by", "ops", "--reason", "r", "--result-json", "{}"]
    expect(run(["transitions", "release", id, "-c", cfg, ...withResult], env).code).toBe(2)
    expect(run(["transitions", "show", "nope", "-c", cfg], env).code).toBe(1)

    const rel = run(
      [
        "transitions",
        "release",
        id,
        "-c",
        cfg,
        "--verified",
        "not-executed",
        "--by",
        "ops",
        "--reason",
        "no charge",
      ],
      env,
    )
    expect(rel.code, rel.err).toBe(0)
    expect(rel.out).toContain(`released ${id} (pay): verified=not_executed by=ops`)
    const pending = run(["transitions", "list", "--stuck", "-c", cfg], env)
    if (pending.out.includes(id))
      expect(pending.out).toContain("released as not executed by ops: the next redispatch runs it once more")
    const again = run(
      ["transitions", "release", id, "-c", cfg, "--verified", "completed", "--by", "ops", "--reason", "x"],
      env,
    )
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/^mycelium: refused: /)

    // The release authorizes exactly one re-run; the redispatch after it replays.
    expect(await stranded.pay({ amount: 1 }, { toolCallId: callId })).toEqual({ ok: 2 })
    expect(await stranded.pay({ amount: 1 }, { toolCallId: callId })).toEqual({ ok: 2 })
    expect(stranded.runs()).toBe(2)
    await stranded.close()
  })
})

describe("mycelium receipts verify and tasks", () => {
  it("verifies a receipt file (exit 0), names a tampered receipt (exit 1), needs a key (exit 2)", async () => {
    const { FileReceiptStore } = await import("../../src/adapters/file-receipts.ts")
    const { ActionLedger } = await import("../../src/core/index.ts")
    const { ReceiptEmitter, hmacReceiptSigner } = await import("../../src/receipts.ts")
    const file = join(cwd, "receipts.jsonl")
    const receipts = new ReceiptEmitter({
      signer: hmacReceiptSigner("k1"),
      store: new FileReceiptStore(file),
      agentId: "a",
    })
    const ledger = new ActionLedger({ receipts })
    const t = ledger.tool(
      { name: "pay", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async (x: { n: number }) => x.n,
    )
    for (let i = 0; i < 3; i++) await t({ n: i }, { toolCallId: `c${i}` })
    const ok = run(["receipts", "verify", file, "--require-chain"], { MYCELIUM_SIGNING_KEY: "k1" })
    expect(ok.code, ok.err).toBe(0)
    expect(ok.out).toContain("3 receipts verified")
    // The key is read stripped, as the original and mycelium.yaml's signing_key_env read it.
    expect(run(["receipts", "verify", file], { MYCELIUM_SIGNING_KEY: "k1\n" }).code).toBe(0)
    expect(run(["receipts", "verify", file], { MYCELIUM_SIGNING_KEY: " \n" }).code).toBe(2)
    expect(run(["receipts", "verify", file]).code).toBe(2)
    const wrongKey = run(["receipts", "verify", file, "--json"], { MYCELIUM_SIGNING_KEY: "k2" })
    expect(wrongKey.code).toBe(1)
    expect(JSON.parse(wrongKey.out).failures[0]).toMatchObject({ reason: "bad_signature" })
    writeFileSync(file, readFileSync(file, "utf8").replace('"n": 1,', '"n": 7,'))
    const tampered = run(["receipts", "verify", file], { MYCELIUM_SIGNING_KEY: "k1" })
    expect(tampered.code).toBe(1)
    expect(tampered.out).toMatch(/FAIL\s+#1 /)
  })

  it("lists and shows tasks of a task-ledger file; release refuses unknown ids (1) and bad verdicts (2)", async () => {
    const { FileTaskStore } = await import("../../src/adapters/file-tasks.ts")
    const { TaskLedger } = await import("../../src/tasks.ts")
    const file = join(cwd, "tasks.json")
    const tasks = new TaskLedger({ storage: new FileTaskStore(file) })
    const report = tasks.task({ name: "report", idFrom: ["day"] }, async (a: { day: string }) => ({
      day: a.day,
    }))
    await report({ day: "d1" })
    const list = run(["tasks", "list", "--file", file, "--json"])
    expect(list.code, list.err).toBe(0)
    const [row] = JSON.parse(list.out) as Array<Record<string, unknown>>
    expect(row).toMatchObject({ task: "report", status: "completed", state: "completed" })
    const show = run(["tasks", "show", row?.request_id as string, "--file", file])
    expect(show.out).toContain("status: completed")
    expect(run(["tasks", "show", "nope", "--file", file]).code).toBe(1)
    const bad = run([
      "tasks",
      "release",
      "x",
      "--file",
      file,
      "--verified",
      "maybe",
      "--by",
      "o",
      "--reason",
      "r",
    ])
    expect(bad.code).toBe(2)
    const unknown = run([
      "tasks",
      "release",
      "x",
      "--file",
      file,
      "--verified",
      "not-executed",
      "--by",
      "o",
      "--reason",
      "r",
    ])
    expect(unknown.code).toBe(1)
    expect(run(["tasks"]).code).toBe(2)
  })
})
