// loadConfig from disk against the real stores mycelium.yaml can name: a file, Upstash (REST) and PostgreSQL.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { ConfigError } from "../../src/core/config/index.ts"
import { loadConfig } from "../../src/node/config.ts"
import {
  DATABASE_URL,
  dropLedgerTable,
  requireUpstash,
  runTag,
  UPSTASH_TOKEN,
  UPSTASH_URL,
  upstashClient,
} from "../adapters/servers/env.ts"
import { chargeYaml } from "./charge-yaml.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-config-"))
const tag = runTag("cfg").replaceAll("-", "_")
const table = `cfg_ledger_${tag}`

const yaml = chargeYaml

async function chargeTwice(path: string, env: Record<string, string>): Promise<number> {
  let runs = 0
  const body = async (args: { amount: number }) => {
    runs++
    return { charged: args.amount }
  }
  // Two configs = two processes' worth of ledgers over one store: the second sees the first's row.
  for (let i = 0; i < 2; i++) {
    const config = await loadConfig(path, { env, onWarning: () => {} })
    const charge = config.apply("charge", body)
    expect(await charge({ amount: 7 }, { toolCallId: `call-${tag}` })).toEqual({ charged: 7 })
  }
  return runs
}

afterAll(async () => {
  const pool = new pg.Pool({ connectionString: DATABASE_URL })
  await dropLedgerTable(pool, table)
  await pool.end()
  rmSync(dir, { recursive: true, force: true })
})

describe("loadConfig with real stores", () => {
  it("file: a redispatch across two loads runs once", async () => {
    const path = join(dir, "file.yaml")
    writeFileSync(path, yaml(`  storage: file\n  path: ${join(dir, "ledger.json")}`))
    expect(await chargeTwice(path, {})).toBe(1)
  })

  it("upstash: url_env and token_env come from the environment", async () => {
    await requireUpstash()
    const path = join(dir, "upstash.yaml")
    writeFileSync(
      path,
      yaml(`  storage: upstash\n  url_env: U_URL\n  token_env: U_TOKEN\n  prefix: "cfg-${tag}:"`),
    )
    expect(await chargeTwice(path, { U_URL: UPSTASH_URL, U_TOKEN: UPSTASH_TOKEN })).toBe(1)
  })

  it("redis: a redis:// url over TCP", async () => {
    const path = join(dir, "redis.yaml")
    writeFileSync(path, yaml(`  storage: redis\n  url_env: R_URL\n  prefix: "cfg-${tag}-tcp:"`))
    expect(await chargeTwice(path, { R_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379" })).toBe(1)
  })

  it("postgres: dsn_env through node-postgres", async () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL })
    await new NeonLedgerStorage({ pool, table }).migrate()
    await pool.end()
    const path = join(dir, "pg.yaml")
    writeFileSync(path, yaml(`  storage: postgres\n  dsn_env: PG_DSN\n  table: ${table}`))
    expect(await chargeTwice(path, { PG_DSN: DATABASE_URL })).toBe(1)
  })

  it("in_flight_ttl: null or 0 keeps an in-flight row without a TTL, as in the original; absent keeps 7 days", async () => {
    await requireUpstash()
    const redis = upstashClient()
    const env = {
      U_URL: UPSTASH_URL,
      U_TOKEN: UPSTASH_TOKEN,
      R_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    }
    const ttls: number[] = []
    for (const [i, [store, ttl]] of [
      ["storage: upstash\n  url_env: U_URL\n  token_env: U_TOKEN", "\n  in_flight_ttl: null"],
      ["storage: redis\n  url_env: R_URL", "\n  in_flight_ttl: null"],
      ["storage: upstash\n  url_env: U_URL\n  token_env: U_TOKEN", ""],
      // The original accepts 0 (its store reads it as no TTL); a file shared with it used to be refused here.
      ["storage: redis\n  url_env: R_URL", "\n  in_flight_ttl: 0"],
    ].entries()) {
      const prefix = `cfg-${tag}-ttl${i}:`
      const path = join(dir, `ttl-${i}.yaml`)
      writeFileSync(path, yaml(`  ${store}\n  prefix: "${prefix}"${ttl}`))
      const config = await loadConfig(path, { env, onWarning: () => {} })
      const charge = config.apply("charge", async (_args: { amount: number }, tx) => {
        ttls.push(await redis.ttl(prefix + tx.requestId))
        return 1
      })
      await charge({ amount: 1 }, { toolCallId: `ttl-${tag}` })
      await config.close()
    }
    expect(ttls.length).toBe(4)
    expect(ttls.slice(0, 2)).toEqual([-1, -1])
    expect(ttls[2]).toBeGreaterThan(604_000)
    expect(ttls[3]).toBe(-1)
  })

  it("a missing file is a ConfigError that says how to create one", async () => {
    await expect(loadConfig(join(dir, "absent.yaml"))).rejects.toThrow(/mycelium init/)
    await expect(loadConfig(join(dir, "absent.yaml"))).rejects.toBeInstanceOf(ConfigError)
  })

  it("errors name the file, line and column", async () => {
    const path = join(dir, "typo.yaml")
    writeFileSync(path, "action_ledger:\n  storage: file\n  pth: x\n")
    await expect(loadConfig(path)).rejects.toThrow(`${path}:3:3 at 'action_ledger.pth': unknown key 'pth'`)
  })
})
