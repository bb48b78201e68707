// loadConfig's task store factory against the real stores `task_ledger:` can name: memory, a file, Redis (RESP),
// Upstash (REST) and PostgreSQL. Two loads stand for two processes sharing the store.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import type { MyceliumConfig } from "../../src/core/config/index.ts"
import { verifyReceipts } from "../../src/core/receipts/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import {
  DATABASE_URL,
  dropLedgerTable,
  requireUpstash,
  runTag,
  UPSTASH_TOKEN,
  UPSTASH_URL,
} from "../adapters/servers/env.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-config-tasks-"))
const tag = runTag("cfgtask").replaceAll("-", "_")
const table = `cfg_tasks_${tag}`
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const opened: MyceliumConfig[] = []

const yaml = (storage: string): string => `
task_ledger:
${storage}
tasks:
  nightly_report:
    ledger: true
    id_from: [region, day]
`

async function load(path: string, env: Record<string, string>): Promise<MyceliumConfig> {
  const config = await loadConfig(path, { env, onWarning: () => {} })
  opened.push(config)
  return config
}

/** Two loads of one file, each calling the task with the same id: returns how many times the body ran. */
async function reportTwice(path: string, env: Record<string, string>): Promise<number> {
  let runs = 0
  const body = async (args: { region: string; day: string }) => {
    runs++
    return { region: args.region, rows: 12 }
  }
  for (let i = 0; i < 2; i++) {
    const config = await load(path, env)
    const report = config.applyTask("nightly_report", body)
    expect(await report({ region: "eu", day: "2026-12-01" })).toEqual({ region: "eu", rows: 12 })
  }
  return runs
}

/** Two loads racing on one id: one runs the body, the other waits for its result. */
async function race(path: string, env: Record<string, string>): Promise<number> {
  let runs = 0
  const [a, b] = await Promise.all([load(path, env), load(path, env)])
  const body = async (args: { region: string; day: string }) => {
    runs++
    await new Promise((r) => setTimeout(r, 150))
    return `${args.region}:${runs}`
  }
  const args = { region: "race", day: tag }
  const results = await Promise.all([
    a.applyTask("nightly_report", body)(args, { wait: true }),
    b.applyTask("nightly_report", body)(args, { wait: true }),
  ])
  expect(results).toEqual(["race:1", "race:1"])
  return runs
}

afterAll(async () => {
  for (const c of opened)
    for (const name of c.tasks.keys()) {
      const ledger = await c.taskLedgerFor(name)
      await (ledger?.storage as { close?: () => Promise<void> } | undefined)?.close?.()
    }
  const pool = new pg.Pool({ connectionString: DATABASE_URL })
  await dropLedgerTable(pool, table)
  await pool.end()
  rmSync(dir, { recursive: true, force: true })
})

describe("loadConfig's task store factory with real stores", () => {
  it("memory: two calls with the same id in one process run once", async () => {
    const path = join(dir, "memory.yaml")
    writeFileSync(path, yaml("  storage: memory"))
    const config = await load(path, {})
    let runs = 0
    const report = config.applyTask("nightly_report", async () => ++runs)
    await report({ region: "eu", day: "d" })
    expect(await report({ region: "eu", day: "d" })).toBe(1)
    expect(runs).toBe(1)
  })

  it("file: a second load finds the first's row in the original's {request_id: row} file", async () => {
    const path = join(dir, "file.yaml")
    const file = join(dir, "tasks.json")
    writeFileSync(path, yaml(`  storage: file\n  path: ${file}`))
    expect(await reportTwice(path, {})).toBe(1)
    const rows = JSON.parse(readFileSync(file, "utf8")) as Record<string, { status: string }>
    expect(rows["nightly_report:region=eu:day=2026-12-01"]?.status).toBe("completed")
    expect(await race(path, {})).toBe(1)
  })

  it("redis: url_env over TCP, in the original's mycelium:task: layout under the configured prefix", async () => {
    const path = join(dir, "redis.yaml")
    const prefix = `cfgtask-${tag}:`
    writeFileSync(path, yaml(`  storage: redis\n  url_env: R_URL\n  prefix: "${prefix}"`))
    expect(await reportTwice(path, { R_URL: REDIS_URL })).toBe(1)
    expect(await race(path, { R_URL: REDIS_URL })).toBe(1)
    const config = await load(path, { R_URL: REDIS_URL })
    const ledger = await config.taskLedgerFor("nightly_report")
    const ids = (await ledger?.list())?.map((t) => t.row.request_id)
    expect(ids).toEqual(["nightly_report:region=eu:day=2026-12-01", `nightly_report:region=race:day=${tag}`])
  })

  it("upstash: url_env and token_env over REST", async () => {
    await requireUpstash()
    const path = join(dir, "upstash.yaml")
    writeFileSync(
      path,
      yaml(`  storage: upstash\n  url_env: U_URL\n  token_env: U_TOKEN\n  prefix: "cfgtask-${tag}-rest:"`),
    )
    expect(await reportTwice(path, { U_URL: UPSTASH_URL, U_TOKEN: UPSTASH_TOKEN })).toBe(1)
  })

  it("postgres: dsn_env through node-postgres, on a migrated table", async () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL })
    await new NeonTaskStore({ pool, table }).migrate()
    await pool.end()
    const path = join(dir, "postgres.yaml")
    writeFileSync(path, yaml(`  storage: postgres\n  dsn_env: PG_DSN\n  table: ${table}`))
    expect(await reportTwice(path, { PG_DSN: DATABASE_URL })).toBe(1)
    expect(await race(path, { PG_DSN: DATABASE_URL })).toBe(1)
  })

  it("audit_receipt with storage: file writes JSONL receipts that verify", async () => {
    const path = join(dir, "receipts.yaml")
    const receipts = join(dir, "receipts.jsonl")
    writeFileSync(
      path,
      `transition:\n  agent_id: reporter\n  policy_version: v1\n` +
        `audit_receipt:\n  signing_key_env: SIGN\n  storage: file\n  path: ${receipts}\n` +
        yaml(`  storage: file\n  path: ${join(dir, "receipted-tasks.json")}`),
    )
    expect(await reportTwice(path, { SIGN: "node-key" })).toBe(1)
    const lines = readFileSync(receipts, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ action: "nightly_report", action_kind: "task", status: "completed" })
    expect(await verifyReceipts(lines, { hmac: "node-key" })).toMatchObject({ ok: true, valid: 1 })
  })
})
