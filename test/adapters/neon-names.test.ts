// Table names on the Neon stores: Postgres cuts identifiers to 63 bytes (two long names were one table, and a
// ledger's claim function replaced another's), reserved words are names too (they were spliced in unquoted), and
// the task and receipt stores' migrate() runs concurrently (it raced on the catalog).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { InvalidTableNameError, NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { NeonReceiptStore } from "../../src/adapters/neon-receipts.ts"
import { NeonTaskStore } from "../../src/adapters/neon-tasks.ts"
import { testLedgerStorage, testReceiptStore, testTaskStore } from "../../src/conformance.ts"
import { dropLedgerTable, runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const tag = runTag("names").replaceAll("-", "_")
const pool = neonPool(undefined, 8)
const peerPool = neonPool(undefined, 4)
const pad = (prefix: string, length: number, fill = "x") => (prefix + fill.repeat(length)).slice(0, length)
// Fixed names (a reserved word takes no tag): this file alone uses them, and drops them before and after.
const RESERVED = { ledger: "window", tasks: "verbose", receipts: "analyse" }
const dropQuoted = async (t: string) => {
  await pool.query(`DROP TABLE IF EXISTS "${t}"`)
  await pool.query(`DROP FUNCTION IF EXISTS "${t}_claim"`)
}

beforeAll(async () => {
  await requirePostgres(pool)
  for (const t of Object.values(RESERVED)) await dropQuoted(t)
})
afterAll(async () => {
  for (const t of Object.values(RESERVED)) await dropQuoted(t)
  await Promise.all([pool.end(), peerPool.end()])
})

describe("neon: table names Postgres would cut to 63 bytes are refused", () => {
  const T0 = 1_800_000_000.5

  it("the ledger refuses names over 50 characters (its index appends _dispatch_idx); two 50-character names stay apart", async () => {
    const long = pad(`l_${tag}_`, 63)
    for (const bad of [`${long}_prod`, `${long}_test`, `${pad(`l_${tag}_`, 61)}_c`, pad(`l_${tag}_`, 51)]) {
      expect(() => new NeonLedgerStorage({ pool, table: bad })).toThrow(InvalidTableNameError)
      expect(() => new NeonLedgerStorage({ pool, table: bad })).toThrow(/at most 50 characters/)
    }
    const a = pad(`l_${tag}_`, 50, "a")
    const b = `${a.slice(0, 49)}b`
    const A = new NeonLedgerStorage({ pool, table: a })
    const B = new NeonLedgerStorage({ pool, table: b })
    try {
      await A.migrate()
      await B.migrate() // replaced A's claim function when the names were cut
      const e = newEntry({ requestId: runTag("pay"), tool: "charge" }, T0)
      expect((await A.tryClaimInflight(e, 60, T0, { dispatchId: "call_1" })).outcome).toBe("claimed")
      expect((await A.get(e.requestId))?.requestId).toBe(e.requestId)
      expect(await B.get(e.requestId)).toBeNull()
      expect(await B.findByDispatchId("call_1")).toEqual([])
      const { rows } = await pool.query("SELECT tablename FROM pg_indexes WHERE indexname = $1", [
        `${a}_dispatch_idx`,
      ])
      expect(rows).toEqual([{ tablename: a }])
    } finally {
      await dropLedgerTable(pool, a)
      await dropLedgerTable(pool, b)
    }
  })

  it("the task and receipt stores refuse names over 63 characters and take 63", async () => {
    const t = pad(`t_${tag}_`, 63)
    const r = pad(`r_${tag}_`, 63)
    expect(() => new NeonTaskStore({ pool, table: `${t}_prod` })).toThrow(/at most 63 characters/)
    expect(() => new NeonReceiptStore({ pool, table: `${r}_prod` })).toThrow(InvalidTableNameError)
    try {
      const tasks = new NeonTaskStore({ pool, table: t })
      await tasks.migrate()
      expect(await tasks.get("none")).toBeNull()
      const receipts = new NeonReceiptStore({ pool, table: r })
      await receipts.migrate()
      expect(await receipts.list()).toEqual([])
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${t}`)
      await pool.query(`DROP TABLE IF EXISTS ${r}`)
    }
  })
})

describe("neon: the task and receipt stores' migrate() is safe to run concurrently", () => {
  for (const [kind, make] of [
    ["tasks", (table: string) => new NeonTaskStore({ pool, table })],
    ["receipts", (table: string) => new NeonReceiptStore({ pool, table })],
  ] as const) {
    it(`${kind}: 8 first-time migrate() calls at once all succeed`, async () => {
      // First-time creations race on the catalog; several fresh tables make the race likely to show.
      for (let round = 0; round < 5; round++) {
        const table = `mig_${kind}_${tag}_${round}`
        try {
          const results = await Promise.allSettled(Array.from({ length: 8 }, () => make(table).migrate()))
          expect(results.filter((x) => x.status === "rejected")).toEqual([])
        } finally {
          await pool.query(`DROP TABLE IF EXISTS ${table}`)
        }
      }
    })
  }
})

// A reserved word is a valid name: every statement quotes it.
let ledgerMigrated: Promise<void> | undefined
testLedgerStorage(`neon (table named '${RESERVED.ledger}')`, async () => {
  ledgerMigrated ??= new NeonLedgerStorage({ pool, table: RESERVED.ledger }).migrate()
  await ledgerMigrated
  return {
    storage: new NeonLedgerStorage({ pool, table: RESERVED.ledger }),
    peer: new NeonLedgerStorage({ pool: peerPool, table: RESERVED.ledger }),
    writeRaw: async (id, json) => {
      await pool.query(`INSERT INTO "${RESERVED.ledger}" (request_id, payload) VALUES ($1, $2::jsonb)`, [
        id,
        json,
      ])
    },
  }
})

testTaskStore(`neon (table named '${RESERVED.tasks}')`, async () => {
  const storage = new NeonTaskStore({ pool, table: RESERVED.tasks })
  await storage.migrate()
  return { storage, peer: new NeonTaskStore({ pool: peerPool, table: RESERVED.tasks }) }
})

testReceiptStore(`neon (table named '${RESERVED.receipts}')`, async () => {
  // Each case wants an empty store; the name is fixed, so the table is made again.
  await dropQuoted(RESERVED.receipts)
  const storage = new NeonReceiptStore({ pool, table: RESERVED.receipts })
  await storage.migrate()
  return { storage, peer: new NeonReceiptStore({ pool: peerPool, table: RESERVED.receipts }) }
})
