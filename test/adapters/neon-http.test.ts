// The HTTP `neon()` path, against scripts/neon-http-server.mjs: an EMULATION of Neon's /sql endpoint in front of
// the real local Postgres (Neon's proxy is not installable). Every adapter statement is a single HTTP query.
import { neon, neonConfig } from "@neondatabase/serverless"
import { afterAll, beforeAll } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { DATABASE_URL, dropLedgerTable, runTag } from "./servers/env.ts"
import { type NeonHttpEmulation, startNeonHttpEmulation } from "./servers/neon-http.ts"

const table = `mycelium_test_${runTag("http").replace(/-/g, "_")}`
let emu: NeonHttpEmulation

beforeAll(async () => {
  emu = await startNeonHttpEmulation()
  neonConfig.fetchEndpoint = emu.endpoint
  const sql = neon(DATABASE_URL)
  try {
    await sql.query("SELECT 1")
  } catch (e) {
    throw new Error(`Postgres at ${DATABASE_URL} is not answering through the HTTP emulation: ${String(e)}`)
  }
  await new NeonLedgerStorage({ sql, table }).migrate()
})
afterAll(async () => {
  await dropLedgerTable(neon(DATABASE_URL), table)
  await emu.stop()
})

testLedgerStorage("neon (HTTP neon() function via the /sql emulation)", () => ({
  storage: new NeonLedgerStorage({ sql: neon(DATABASE_URL), table }),
  peer: new NeonLedgerStorage({ sql: neon(DATABASE_URL), table }),
  writeRaw: async (id, json) => {
    await neon(DATABASE_URL).query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [
      id,
      json,
    ])
  },
}))
