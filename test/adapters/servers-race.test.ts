// Exactly-once across OS processes, on real servers: 4 processes each dispatch the same 200 calls, 50 at a time,
// through their own ledger and client. Executions are counted by the server (INCR / INSERT per body run).
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { childBundles } from "../child-bundle.ts"
import { dropLedgerTable, requireUpstash, runTag, upstashClient } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const run = promisify(execFile)
const CHILD = fileURLToPath(new URL("./servers/race-child.ts", import.meta.url))
const bundled = childBundles()
const PROCESSES = 4
const CONCURRENCY = 50
const CALLS = 200
const ROUNDS = 5

interface ChildReport {
  pid: number
  results: Record<string, { charged: number; call: string; by: number }>
}

async function round(backend: "upstash" | "neon", tag: string): Promise<ChildReport[]> {
  const outs = await Promise.all(
    Array.from({ length: PROCESSES }, () =>
      run(process.execPath, [bundled(CHILD), backend, tag, String(CALLS), String(CONCURRENCY)], {
        maxBuffer: 16 * 1024 * 1024,
        timeout: 120_000,
      }),
    ),
  )
  return outs.map((o) => JSON.parse(o.stdout.trim().split("\n").at(-1) as string) as ChildReport)
}

function expectSameResults(reports: ChildReport[]): void {
  const [first, ...rest] = reports
  expect(Object.keys(first?.results ?? {})).toHaveLength(CALLS)
  for (const r of rest) expect(r.results).toEqual(first?.results)
}

describe("cross-process races on real servers", () => {
  const pool = neonPool()
  const tags: string[] = []

  beforeAll(async () => {
    await requireUpstash()
    await requirePostgres(pool)
  })
  afterAll(async () => {
    for (const t of tags) {
      await dropLedgerTable(pool, `race_${t}`)
      await pool.query(`DROP TABLE IF EXISTS race_${t}_exec`)
    }
    await pool.end()
  })

  for (let i = 1; i <= ROUNDS; i++) {
    it(`upstash round ${i}: ${PROCESSES} processes × ${CONCURRENCY} concurrent over ${CALLS} calls → ${CALLS} executions`, async () => {
      const tag = runTag(`u${i}`).replace(/-/g, "_")
      const reports = await round("upstash", tag)
      expectSameResults(reports)
      const redis = upstashClient()
      const keys: string[] = []
      let cursor: string | number = "0"
      do {
        const [next, batch]: [string | number, string[]] = await redis.scan(cursor, {
          match: `mycelium-race:${tag}:exec:*`,
          count: 1000,
        })
        keys.push(...batch)
        cursor = next
      } while (String(cursor) !== "0")
      expect(keys).toHaveLength(CALLS)
      const counts = (await redis.mget<number[]>(...keys)).map(Number)
      expect(counts.reduce((a, b) => a + b, 0)).toBe(CALLS)
      expect(counts.every((c) => c === 1)).toBe(true)
    }, 120_000)

    it(`neon round ${i}: ${PROCESSES} processes × ${CONCURRENCY} concurrent over ${CALLS} calls → ${CALLS} executions`, async () => {
      const tag = runTag(`n${i}`).replace(/-/g, "_")
      tags.push(tag)
      await new NeonLedgerStorage({ pool, table: `race_${tag}` }).migrate()
      await pool.query(
        `CREATE TABLE race_${tag}_exec (id BIGSERIAL PRIMARY KEY, call_id TEXT NOT NULL, pid INT)`,
      )
      const reports = await round("neon", tag)
      expectSameResults(reports)
      const { rows } = await pool.query(
        `SELECT count(*)::int AS total, count(DISTINCT call_id)::int AS calls FROM race_${tag}_exec`,
      )
      expect(rows[0]).toEqual({ total: CALLS, calls: CALLS })
    }, 120_000)
  }
})
