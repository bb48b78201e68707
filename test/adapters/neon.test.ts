import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { InvalidTableNameError, NeonLedgerStorage, NeonSchemaMissingError } from "../../src/adapters/neon.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, LedgerStaleFenceError, LedgerStorageUnavailableError } from "../../src/core/index.ts"
import { dropLedgerTable, runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const table = `mycelium_test_${runTag("conf").replace(/-/g, "_")}`
const pool = neonPool()
const peerPool = neonPool()

beforeAll(async () => {
  await requirePostgres(pool)
  await new NeonLedgerStorage({ pool, table }).migrate()
})
afterAll(async () => {
  await dropLedgerTable(pool, table)
  await Promise.all([pool.end(), peerPool.end()])
})

testLedgerStorage("neon (real Postgres via WebSocket Pool)", () => ({
  storage: new NeonLedgerStorage({ pool, table }),
  peer: new NeonLedgerStorage({ pool: peerPool, table }),
  writeRaw: async (id, json) => {
    await pool.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [id, json])
  },
}))

describe("neon: list() pages by the stored key", () => {
  it("ends when a payload names another id than its key (a row copied by hand used to restart the page forever)", async () => {
    const t = `${table}_copied`
    const s = new NeonLedgerStorage({ pool, table: t })
    await s.migrate()
    try {
      // A full page (500 rows) whose last payload names an id that sorts first: the next page started over.
      await s.set(newEntry({ requestId: "r000", tool: "t" }, 1))
      await pool.query(
        `INSERT INTO ${t} (request_id, payload) SELECT 'r' || lpad(i::text, 3, '0'),
           jsonb_set(payload, '{request_id}', to_jsonb(CASE WHEN i = 499 THEN 'a-copied' ELSE 'r' || lpad(i::text, 3, '0') END))
         FROM ${t}, generate_series(1, 600) AS i WHERE request_id = 'r000'`,
      )
      let n = 0
      for await (const _ of s.list({})) if (++n > 1000) break
      expect(n).toBe(601)
    } finally {
      await dropLedgerTable(pool, t)
    }
  })
})

describe("neon: schema and writes", () => {
  const T0 = 1_800_000_000.5

  it("validates the table name", () => {
    for (const bad of ["Ledger", "1abc", "a-b", "a;drop table x", ""]) {
      expect(() => new NeonLedgerStorage({ pool, table: bad })).toThrow(InvalidTableNameError)
    }
  })

  it("migrate() is idempotent, also run concurrently, and creates the dispatch-id index", async () => {
    // First-time creations race on the catalog; several fresh tables make the race likely to show.
    for (let round = 0; round < 5; round++) {
      const fresh = `${table}_mig${round}`
      try {
        await Promise.all(
          Array.from({ length: 8 }, () => new NeonLedgerStorage({ pool, table: fresh }).migrate()),
        )
      } finally {
        await dropLedgerTable(pool, fresh)
      }
    }
    const t = `${table}_mig`
    try {
      await Promise.all(Array.from({ length: 4 }, () => new NeonLedgerStorage({ pool, table: t }).migrate()))
      await new NeonLedgerStorage({ pool, table: t }).migrate()
      const { rows } = await pool.query(
        "SELECT indexdef FROM pg_indexes WHERE tablename = $1 ORDER BY indexname",
        [t],
      )
      const defs = rows.map((r: { indexdef: string }) => r.indexdef).join("\n")
      expect(defs).toContain("(request_id)")
      expect(defs).toMatch(/\(\(\(payload -> 'kwargs'::text\) ->> 'tool_call_id'::text\)\)/)
      const cols = await pool.query(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
        [t],
      )
      expect(cols.rows).toEqual([
        { column_name: "request_id", data_type: "text", is_nullable: "NO" },
        { column_name: "payload", data_type: "jsonb", is_nullable: "NO" },
      ])
    } finally {
      await dropLedgerTable(pool, t)
    }
  })

  it("a missing table or claim function is a typed error that says to run migrate(), and nothing runs", async () => {
    const t = `${table}_nomig`
    const s = new NeonLedgerStorage({ pool, table: t })
    const entry = newEntry({ requestId: runTag("nomig"), tool: "t" }, T0)
    try {
      // Never migrated: no table.
      await expect(s.tryClaimInflight(entry, 60, T0)).rejects.toBeInstanceOf(NeonSchemaMissingError)
      await expect(s.get(entry.requestId)).rejects.toThrow(/run `await storage.migrate\(\)`/)
      // Migrated by an older version: the table is there, the claim function is not.
      await s.migrate()
      await pool.query(`DROP FUNCTION ${t}_claim`)
      await expect(s.tryClaimInflight(entry, 60, T0)).rejects.toBeInstanceOf(NeonSchemaMissingError)
      let ran = 0
      const ledger = new ActionLedger({ storage: s, leaseTtl: 60 })
      const charge = ledger.tool(
        { name: "charge", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
        async () => ++ran,
      )
      const err = await charge({}, { toolCallId: runTag("nomig-call") }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(LedgerStorageUnavailableError)
      expect(String((err as Error).message)).toContain("migrate()")
      expect(ran).toBe(0)
      await s.migrate() // repairs it
      expect((await s.tryClaimInflight(entry, 60, T0)).outcome).toBe("claimed")
    } finally {
      await dropLedgerTable(pool, t)
    }
  })

  it("set() never moves the fence backwards", async () => {
    const s = new NeonLedgerStorage({ pool, table })
    const rid = `${runTag("fence")}`
    await s.set(newEntry({ requestId: rid, tool: "t", fence: 5 }, T0))
    await expect(s.set(newEntry({ requestId: rid, tool: "t", fence: 4 }, T0))).rejects.toBeInstanceOf(
      LedgerStaleFenceError,
    )
    expect((await s.get(rid))?.fence).toBe(5)
  })

  it("floats survive JSONB exactly", async () => {
    const s = new NeonLedgerStorage({ pool, table })
    const values = [1767225600.123456, 0.1 + 0.2, 1e-7, 123456789.123, 2 ** 53 - 1, 1e21, -0.5, 5e-324]
    for (const [i, v] of values.entries()) {
      const e = newEntry({ requestId: `${runTag("float")}-${i}`, tool: "t", leaseUntil: v, result: [v] }, v)
      await s.set(e)
      expect(await s.get(e.requestId)).toEqual(e)
    }
  })
})
