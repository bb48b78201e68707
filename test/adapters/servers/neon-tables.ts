// A test file's own Neon ledger, task and receipt tables on the local Postgres: made before its tests (failing loudly
// when Postgres is not up), dropped after them with the pool closed.
import { afterAll, beforeAll } from "vitest"
import { NeonLedgerStorage } from "../../../src/adapters/neon.ts"
import { NeonReceiptStore } from "../../../src/adapters/neon-receipts.ts"
import { NeonTaskStore } from "../../../src/adapters/neon-tasks.ts"
import { dropLedgerTable, runTag } from "./env.ts"
import { neonPool, requirePostgres } from "./neon.ts"

export function neonTables(tag: string) {
  const table = `mycelium_test_${runTag(tag).replace(/-/g, "_")}`
  const tables = { pool: neonPool(), table, tasksTable: `${table}_tasks`, receiptsTable: `${table}_receipts` }
  const { pool, tasksTable, receiptsTable } = tables
  beforeAll(async () => {
    await requirePostgres(pool)
    await new NeonLedgerStorage({ pool, table }).migrate()
    await new NeonTaskStore({ pool, table: tasksTable }).migrate()
    await new NeonReceiptStore({ pool, table: receiptsTable }).migrate()
  })
  afterAll(async () => {
    await dropLedgerTable(pool, table)
    await pool.query(`DROP TABLE IF EXISTS ${tasksTable}`)
    await pool.query(`DROP TABLE IF EXISTS ${receiptsTable}`)
    await pool.end()
  })
  return tables
}
