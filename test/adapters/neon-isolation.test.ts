// The Neon ledger on sessions whose default isolation is REPEATABLE READ or SERIALIZABLE (a database, role or pool
// setting, common on managed Postgres). The claim function relied on READ COMMITTED: after its advisory lock on the
// dispatch id, each statement was to take a fresh snapshot and see every sibling claimed before it. Under the other
// levels the whole call reads the snapshot taken before the lock, so two racing claims under one tool-call id could
// miss each other (the args-drift gate let a drifted re-send run), and a claim or compare-and-set that lost a race
// failed with SQLSTATE 40001, reported as an outage. Guarded here: the claim function answers no siblings there (the
// ledger reads them with findByDispatchId, a statement of its own), a 40001 is run again as a new statement, and
// under READ COMMITTED the siblings still come with the claim. The whole conformance suite runs on each level.
import type { Pool, PoolClient } from "@neondatabase/serverless"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { testLedgerStorage } from "../../src/conformance.ts"
import { ActionLedger, LedgerIdentityConflictError, type LedgerStorage } from "../../src/core/index.ts"
import { dropLedgerTable, runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const LEVELS = ["repeatable read", "serializable"] as const
type Level = (typeof LEVELS)[number] | "read committed"

const table = `mycelium_test_${runTag("iso").replace(/-/g, "_")}`
const plain = neonPool()
const pools: Pool[] = [plain]

/** A pool whose every connection runs its transactions at `level` unless told otherwise. */
function poolAt(level: Level): Pool {
  const pool = neonPool(undefined, 12)
  // Queued on the connection before the pool hands it out, so it runs before any statement of the store.
  pool.on("connect", (c: PoolClient) => {
    void c.query(`SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL ${level}`)
  })
  pools.push(pool)
  return pool
}

/** The store on `pool`, counting its statements by their first words. */
function counted(pool: Pool): { storage: NeonLedgerStorage; statements: string[] } {
  const statements: string[] = []
  const storage = new NeonLedgerStorage({
    pool: {
      query: (text: string, values?: unknown[]) => {
        statements.push(/FROM "\w+_claim"/.test(text) ? "claim" : (text.split(/\s/)[0] ?? ""))
        return pool.query(text, values)
      },
    },
    table,
  })
  return { storage, statements }
}

beforeAll(async () => {
  await requirePostgres(plain)
  await new NeonLedgerStorage({ pool: plain, table }).migrate()
})
afterAll(async () => {
  await dropLedgerTable(plain, table)
  await Promise.all(pools.map((p) => p.end()))
})

for (const level of LEVELS) {
  const a = poolAt(level)
  const b = poolAt(level)
  testLedgerStorage(`neon (sessions in ${level})`, () => ({
    storage: new NeonLedgerStorage({ pool: a, table }),
    peer: new NeonLedgerStorage({ pool: b, table }),
    writeRaw: async (id, json) => {
      await plain.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [id, json])
    },
  }))

  describe(`neon ledger, sessions in ${level}`, () => {
    const T0 = 1_800_000_000.5
    const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } as const

    it("the sessions run at that level", async () => {
      const r = await a.query("SHOW transaction_isolation")
      expect((r.rows[0] as { transaction_isolation: string }).transaction_isolation).toBe(level)
    })

    it("a claim under a tool-call id answers no siblings: the ledger reads them with findByDispatchId", async () => {
      const { storage, statements } = counted(a)
      const tc = `${runTag("iso-one")}-${level.replace(" ", "-")}`
      const first = await storage.tryClaimInflight(
        newEntry({ requestId: `${tc}-1`, tool: "t", kwargs: { tool_call_id: tc } }, T0),
        60,
        T0,
        { dispatchId: tc },
      )
      expect(first.outcome === "claimed" && first.dispatchSiblings).toBe(undefined)
      let runs = 0
      const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
      const pay = ledger.tool({ name: "t", binding }, async () => ++runs)
      statements.length = 0
      // Another request id under the same tool-call id: the sibling read after the claim refuses it.
      await expect(pay({ n: 2 }, { toolCallId: tc, requestId: `${tc}-2` })).rejects.toBeInstanceOf(
        LedgerIdentityConflictError,
      )
      expect(runs).toBe(0)
      expect(statements).toEqual(["claim", "SELECT", "UPDATE"])
    })

    // The siblings are read after each claim committed, as with Upstash's `dispatchLookup: "scan"`: of two racing
    // claims at least one sees the other, so at most one runs (both may be refused; READ COMMITTED runs exactly one).
    it("one tool-call id re-sent with drifted args by 12 racing workers on two pools: at most one runs", async () => {
      const tc = `${runTag("iso-drift")}-${level.replace(" ", "-")}`
      let runs = 0
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => {
          const storage: LedgerStorage = new NeonLedgerStorage({ pool: i % 2 ? b : a, table })
          const ledger = new ActionLedger({ storage, leaseTtl: 60, onWarning: () => {} })
          const charge = ledger.tool({ name: "charge", binding }, async (x: { n: number }) => {
            runs++
            return x.n
          })
          return charge({ n: i }, { toolCallId: tc })
        }),
      )
      expect(runs).toBeLessThanOrEqual(1)
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(runs)
      const refused = results.filter((r) => r.status === "rejected")
      expect(refused).toHaveLength(12 - runs)
      for (const r of refused)
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(LedgerIdentityConflictError)
    })

    it("100 concurrent claims of one new id on two pools: one winner, 99 in_flight, no outage", async () => {
      const id = `${runTag("iso-race")}-${level.replace(" ", "-")}`
      const results = await Promise.allSettled(
        Array.from({ length: 100 }, (_, i) =>
          new NeonLedgerStorage({ pool: i % 2 ? b : a, table }).tryClaimInflight(
            newEntry({ requestId: id, tool: "t", owner: `w${i}` }, T0),
            60,
            T0,
          ),
        ),
      )
      expect(results.filter((r) => r.status === "rejected").map((r) => String(r.reason))).toEqual([])
      const outcomes = results.map((r) => (r.status === "fulfilled" ? r.value.outcome : "rejected"))
      expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1)
      expect(outcomes.filter((o) => o === "in_flight")).toHaveLength(99)
    })
  })
}

describe("neon ledger, sessions in read committed", () => {
  it("a claim under a tool-call id still carries its siblings: one statement, no findByDispatchId", async () => {
    const T0 = 1_800_000_000.5
    const { storage, statements } = counted(poolAt("read committed"))
    const tc = runTag("iso-rc")
    for (const n of [1, 2]) {
      const r = await storage.tryClaimInflight(
        newEntry({ requestId: `${tc}-${n}`, tool: "t", kwargs: { tool_call_id: tc } }, T0),
        60,
        T0,
        { dispatchId: tc },
      )
      expect(r.outcome === "claimed" && r.dispatchSiblings?.map((e) => e.requestId)).toEqual(
        n === 1 ? [] : [`${tc}-1`],
      )
    }
    expect(statements).toEqual(["claim", "claim"])
  })
})
