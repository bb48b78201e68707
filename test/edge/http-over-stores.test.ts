// HttpLedgerStorage's claim check ('claimed' must be the row this claim wrote) against the real app over every
// server-side store, not only memory: each store's claim (Lua, SQL, the file's lock) answers legitimately, and rows a
// Python worker or a tombstone left behind are reclaimed through the API as directly.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { dropLedgerTable, requireUpstash, runTag, upstashClient } from "../adapters/servers/env.ts"
import { neonPool, requirePostgres } from "../adapters/servers/neon.ts"
import { overHttp } from "./over-http.ts"

const TAG = runTag("http-stores").replace(/-/g, "_")
const prefix = `mycelium-test:${TAG}:action:`
const table = `mycelium_test_${TAG}`
const pool = neonPool()
const root = mkdtempSync(join(tmpdir(), "mycelium-http-stores-"))

beforeAll(async () => {
  await requireUpstash()
  await requirePostgres(pool)
  await new NeonLedgerStorage({ pool, table }).migrate()
})
afterAll(async () => {
  await dropLedgerTable(pool, table)
  await pool.end()
  rmSync(root, { recursive: true, force: true })
})

/** The store and the server's clock, which the suite's model reads (its compare-and-set judges leases by it). */
const fixture = (storage: ReturnType<typeof overHttp>) => ({ storage, leaseClock: storage.leaseClock })

testLedgerStorage("http over upstash (Lua claim, tombstones)", () => ({
  ...fixture(overHttp((now) => new UpstashLedgerStorage({ redis: upstashClient(), prefix, now }))),
  writeRaw: async (id, json) => {
    await upstashClient().eval(
      "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return 1",
      [prefix + id, `${prefix.slice(0, -1)}-tomb:${id}`],
      [json],
    )
  },
}))

testLedgerStorage("http over neon (SQL claim)", () => ({
  ...fixture(overHttp(() => new NeonLedgerStorage({ pool, table }))),
  writeRaw: async (id, json) => {
    await pool.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [id, json])
  },
}))

let n = 0
testLedgerStorage("http over file", () => {
  const path = join(root, `l${n++}`, "ledger.json")
  const file = new FileLedgerStorage(path)
  return {
    ...fixture(overHttp(() => file)),
    writeRaw: async (id, json) => {
      const rows = existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>) : {}
      rows[id] = JSON.parse(json)
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(`${path}.raw`, JSON.stringify(rows))
      renameSync(`${path}.raw`, path)
    },
    cleanup: () => file.close(),
  }
})
