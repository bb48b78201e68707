import { afterAll, beforeAll } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { testLedgerStorage } from "../conformance/ledger-storage.ts"
import { runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const table = `mycelium_test_${runTag("conf").replace(/-/g, "_")}`
const pool = neonPool()
const peerPool = neonPool()

beforeAll(async () => {
  await requirePostgres(pool)
  await new NeonLedgerStorage({ pool, table }).migrate()
})
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await Promise.all([pool.end(), peerPool.end()])
})

testLedgerStorage("neon (real Postgres via WebSocket Pool)", () => ({
  storage: new NeonLedgerStorage({ pool, table }),
  peer: new NeonLedgerStorage({ pool: peerPool, table }),
}))
