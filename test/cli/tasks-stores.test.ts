// `mycelium tasks` as a subprocess against task ledgers on Redis and PostgreSQL, named by mycelium.yaml or by flags.
// The rows are written by applyTask in this process through loadConfig's task store factory.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import type { MyceliumConfig } from "../../src/core/config/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import { DATABASE_URL, dropLedgerTable, runTag } from "../adapters/servers/env.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-tasks-cli-"))
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const tag = runTag("clitask").replaceAll("-", "_")
const table = `cli_tasks_${tag}`
const prefix = `cli-task-${tag}:`
const opened: MyceliumConfig[] = []

const run = cliRunner(cwd)

afterAll(async () => {
  for (const c of opened) {
    const ledger = await c.taskLedgerFor("import_batch")
    await (ledger?.storage as { close?: () => Promise<void> } | undefined)?.close?.()
  }
  const pool = new pg.Pool({ connectionString: DATABASE_URL })
  await dropLedgerTable(pool, table)
  await pool.end()
  rmSync(cwd, { recursive: true, force: true })
})

describe.each([
  [
    "redis",
    `storage: redis\n  url_env: R_URL\n  prefix: "${prefix}"`,
    ["--redis-url", REDIS_URL, "--prefix", prefix],
  ],
  [
    "postgres",
    `storage: postgres\n  dsn_env: PG_DSN\n  table: ${table}`,
    ["--postgres-dsn", DATABASE_URL, "--table", table],
  ],
] as const)("mycelium tasks on a %s task ledger", (kind, storage, flags) => {
  const env = { R_URL: REDIS_URL, PG_DSN: DATABASE_URL }
  const cfg = join(cwd, `${kind}.yaml`)

  it("lists, shows and releases what applyTask wrote; the next call gets the released result", async () => {
    if (kind === "postgres") {
      const pool = new pg.Pool({ connectionString: DATABASE_URL })
      await new NeonTaskStore({ pool, table }).migrate()
      await pool.end()
    }
    writeFileSync(
      cfg,
      `task_ledger:\n  ${storage}\ntasks:\n  import_batch:\n    ledger: true\n    id_from: [batch]\n`,
    )
    const config = await loadConfig(cfg, { env, onWarning: () => {} })
    opened.push(config)
    let runs = 0
    const importBatch = config.applyTask("import_batch", async (a: { batch: string }) => {
      runs++
      if (a.batch === "b2") throw new Error("upstream 503")
      return { imported: a.batch }
    })
    await importBatch({ batch: "b1" })
    await expect(importBatch({ batch: "b2" })).rejects.toThrow("upstream 503")

    const list = run(["tasks", "list", "-c", cfg, "--json"], env)
    expect(list.code, list.err).toBe(0)
    const rows = JSON.parse(list.out) as Array<Record<string, unknown>>
    expect(rows.map((r) => [r.request_id, r.status, r.state])).toEqual([
      ["import_batch:batch=b1", "completed", "completed"],
      ["import_batch:batch=b2", "failed", "failed"],
    ])
    // The same rows through the direct flag, without a config.
    const direct = run(["tasks", "list", ...flags])
    expect(direct.code, direct.err).toBe(0)
    expect(direct.out).toContain("import_batch:batch=b1")
    expect(direct.out).toContain("import_batch:batch=b2")

    const show = run(["tasks", "show", "import_batch:batch=b2", "-c", cfg], env)
    expect(show.code, show.err).toBe(0)
    expect(show.out).toContain("error: Error: upstream 503")
    expect(run(["tasks", "show", "import_batch:batch=nope", "-c", cfg], env).code).toBe(1)

    const release = run(
      [
        "tasks",
        "release",
        "import_batch:batch=b2",
        "-c",
        cfg,
        "--verified",
        "completed",
        "--by",
        "ops@example.com",
        "--reason",
        "imported by hand",
        "--result-json",
        '{"imported":"b2","by_hand":true}',
      ],
      env,
    )
    expect(release.code, release.err).toBe(0)
    expect(release.out).toContain("released task import_batch:batch=b2")
    // A completed task is refused (exit 1), not released twice.
    expect(
      run(
        [
          "tasks",
          "release",
          "import_batch:batch=b2",
          "-c",
          cfg,
          "--verified",
          "completed",
          "--by",
          "o",
          "--reason",
          "r",
        ],
        env,
      ).code,
    ).toBe(1)
    expect(await importBatch({ batch: "b2" })).toEqual({ imported: "b2", by_hand: true })
    expect(runs).toBe(2)
  })
})

describe("mycelium tasks store selection errors", () => {
  it("a memory task ledger, a config with two task stores, no task ledger and a bad --redis-url exit 2", () => {
    const memory = join(cwd, "memory.yaml")
    writeFileSync(memory, "task_ledger:\n  storage: memory\n")
    const m = run(["tasks", "list", "-c", memory])
    expect(m.code).toBe(2)
    expect(m.err).toContain("another process's memory")
    const two = join(cwd, "two.yaml")
    writeFileSync(
      two,
      `task_ledger:\n  storage: file\n  path: a.json\ntasks:\n  t:\n    ledger: {storage: file, path: b.json}\n`,
    )
    const t = run(["tasks", "list", "-c", two])
    expect(t.code).toBe(2)
    expect(t.err).toContain("2 different stores")
    const none = join(cwd, "none.yaml")
    writeFileSync(none, "tasks: {}\n")
    expect(run(["tasks", "list", "-c", none]).code).toBe(2)
    const bad = run(["tasks", "list", "--redis-url", "http://x"])
    expect(bad.code).toBe(2)
    expect(bad.err).toContain("redis://")
    expect(`${m.err}${t.err}${bad.err}`).not.toMatch(/\n\s+at /)
  })

  it("--help lists every store", () => {
    const r = run(["tasks", "--help"])
    expect(r.code).toBe(0)
    for (const flag of ["--file", "--redis-url", "--postgres-dsn", "-c, --config"])
      expect(r.out).toContain(flag)
  })
})
