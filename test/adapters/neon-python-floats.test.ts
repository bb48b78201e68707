// A TypeScript write over a row the Python original wrote to Postgres (an operator's release or mark-dead) keeps the
// row's args and kwargs as Python wrote them. JSONB keeps a number's text (100.0 stays 100.0, an int past 2^53 stays
// exact), and the original re-derives a row's args fingerprint from it, where 100.0 is not 100; the adapter sent the
// row as JSON.stringify writes it (100, the int rounded), so after a release from TypeScript the Python worker's retry
// of the same request was an args drift (always refused for an explicit request_id) instead of a replay. Checked on
// the real server: a rewrite keeps the stored args and kwargs where they equal the new ones as JSONB values.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NeonLedgerStorage } from "../../src/adapters/neon.ts"
import { ActionLedger, type LedgerEntry } from "../../src/core/index.ts"
import { argsFingerprint } from "../../src/core/ledger/model/identity.ts"
import { parsePythonJson } from "../../src/core/python-json.ts"
import { dropLedgerTable, runTag } from "./servers/env.ts"
import { neonPool, requirePostgres } from "./servers/neon.ts"

const table = `mycelium_test_${runTag("pyfloat").replace(/-/g, "_")}`
const pool = neonPool()
const storage = new NeonLedgerStorage({ pool, table })
const ledger = new ActionLedger({ storage, onWarning: () => {} })

// json.dumps of the original's to_dict(), as psycopg sends it (`%s::jsonb`).
const pythonRow = (id: string, outcome: "BLOCKED" | "IN_FLIGHT") =>
  `{"request_id": "${id}", "tool": "send_payment", "args": [2.0, 12345678901234567891], ` +
  `"kwargs": {"amount": 100.0, "fee": 0.50, "order": {"id": 7, "lines": [1.0, 3]}, "tool_call_id": "call_${id}"}, ` +
  `"status": "${outcome === "BLOCKED" ? "failed" : "in-flight"}", "terminal_outcome": "${outcome}", "fence": 2, ` +
  `"result": null, "error": null, "started_at": 1767225600.5, "finished_at": null, "lease_until": 1767225660.5, ` +
  `"owner": "host-a:42", "idempotency_key": "${id}", "side_effect_boundary": "maybe_crossed", ` +
  `"effect_phase": "ATTEMPTING", "effect_protocol_required": false, "effect_id": "${id}", "schema_version": 2}`

/** The stored payload as Postgres answers it, and the args fingerprint the original derives from it. */
async function stored(
  id: string,
): Promise<{ args: string; kwargs: string; fingerprint: string; row: LedgerEntry }> {
  const r = await pool.query(
    `SELECT payload::text AS p, (payload->'args')::text AS a, (payload->'kwargs')::text AS k FROM ${table} WHERE request_id = $1`,
    [id],
  )
  const { p, a, k } = r.rows[0] as { p: string; a: string; k: string }
  const exact = parsePythonJson(p) as { args: unknown[]; kwargs: Record<string, unknown> }
  return {
    args: a,
    kwargs: k,
    fingerprint: argsFingerprint(exact.kwargs, exact.args),
    row: (await storage.get(id)) as LedgerEntry,
  }
}

beforeAll(async () => {
  await requirePostgres(pool)
  await storage.migrate()
})
afterAll(async () => {
  await dropLedgerTable(pool, table)
  await pool.end()
})

const insert = (id: string, outcome: "BLOCKED" | "IN_FLIGHT") =>
  pool.query(`INSERT INTO ${table} (request_id, payload) VALUES ($1, $2::jsonb)`, [
    id,
    pythonRow(id, outcome),
  ])

describe("neon: a TypeScript write over a Python row", () => {
  it("JSONB keeps what Python wrote: 100.0, 0.50 and the exact int", async () => {
    await insert("py-as-written", "BLOCKED")
    const s = await stored("py-as-written")
    expect(s.args).toBe("[2.0, 12345678901234567891]")
    expect(s.kwargs).toBe(
      '{"fee": 0.50, "order": {"id": 7, "lines": [1.0, 3]}, "amount": 100.0, "tool_call_id": "call_py-as-written"}',
    )
  })

  /** Writes `write` over a fresh Python row, then checks the args, kwargs and fingerprint it leaves are Python's. */
  async function keptOver(id: string, outcome: "BLOCKED" | "IN_FLIGHT", write: () => Promise<unknown>) {
    await insert(id, outcome)
    const before = await stored(id)
    await write()
    const after = await stored(id)
    expect([after.args, after.kwargs, after.fingerprint]).toEqual([
      before.args,
      before.kwargs,
      before.fingerprint,
    ])
    return after.row
  }

  it("release() keeps the stored args and kwargs, so the original's fingerprint is unchanged", async () => {
    const row = await keptOver("py-release", "BLOCKED", () =>
      ledger.release("py-release", {
        verified: "completed",
        result: "pi_1",
        by: "ops@example",
        reason: "seen at provider",
      }),
    )
    expect(row.terminalOutcome).toBe("COMPLETED")
  })

  it("markWorkerDeadFor() keeps them too", async () => {
    const row = await keptOver("py-dead", "IN_FLIGHT", () =>
      ledger.markWorkerDeadFor("py-dead", { by: "ops@example", reason: "host gone" }),
    )
    expect(row.workerDeadAssertedBy).toBe("ops@example")
  })

  it("set() keeps them where equal and writes what changed", async () => {
    const id = "py-set"
    await insert(id, "BLOCKED")
    const before = await stored(id)
    await storage.set({ ...before.row, fence: 3, kwargs: { ...before.row.kwargs, amount: 101 } })
    const after = await stored(id)
    expect(after.args).toBe(before.args)
    expect(JSON.parse(after.kwargs).amount).toBe(101)
    expect(after.kwargs).toContain('"amount": 101,')
  })
})
