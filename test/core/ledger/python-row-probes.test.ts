// The rows a Python worker reads from this package, field by field as the reference describes the original's
// (§1.8 new in-flight entry and claim stamps, §1.11 complete(), §2.1 LedgerEntry), and the two places where they
// differ on purpose (docs/python-differences.md): the owner string and a completion whose result was not stored.
import { describe, expect, it } from "vitest"
import { entryToRow } from "../../../src/adapter-kit.ts"
import { ActionLedger, LedgerResultUnstorableError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const NOW = 1_800_000_000
const binding = { agentId: "a", policyVersion: "p", sideEffectClass: "keyed_mutate" as const }

describe("rows as the original reads them", () => {
  it("a claim and a completion write the original's stamps", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      clock: new ManualClock(NOW),
      leaseTtl: 60,
      onWarning: () => {},
    })
    let inFlight: Record<string, unknown> = {}
    const pay = ledger.tool({ name: "pay", binding }, async () => {
      const rows = []
      for await (const e of storage.list()) rows.push(entryToRow(e))
      inFlight = rows[0] as Record<string, unknown>
      return { charge: "ch_1" }
    })
    await pay({ amount: 5 }, { toolCallId: "call_1" })
    const rid = inFlight.request_id as string
    expect(Object.keys(inFlight)).toHaveLength(36)
    expect(inFlight).toMatchObject({
      status: "in-flight",
      terminal_outcome: "IN_FLIGHT",
      fence: 1,
      lease_until: NOW + 60,
      last_heartbeat_at: NOW,
      started_at: NOW,
      idempotency_key: rid,
      effect_id: rid,
      side_effect_boundary: "not_crossed",
      effect_protocol_required: true,
      schema_version: 2,
      kwargs: { amount: 5, tool_call_id: "call_1" },
      args: [],
    })
    const done = entryToRow((await storage.get(rid)) as never)
    expect(done).toMatchObject({
      status: "completed",
      terminal_outcome: "COMPLETED",
      side_effect_boundary: "crossed",
      lease_until: null,
      finished_at: NOW,
      effect_phase: "COMMITTED",
      result: { charge: "ch_1" },
      fence: 1,
    })
  })

  it("owner is ts- and 8 hex per process, not the original's host:pid", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const c = await ledger.claim({ tool: "t", args: {}, meta: { requestId: "r" } })
    expect(c.entry.owner).toMatch(/^ts-[0-9a-f]{8}$/)
  })

  it("a result over the store's limit completes with result null: the original's replay would read None", async () => {
    const storage = new MemoryLedgerStorage({ limits: { maxRowBytes: 2_000 } })
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    let runs = 0
    const big = ledger.tool({ name: "big", binding }, async () => {
      runs++
      return "x".repeat(5_000)
    })
    // The call that ran gets its result; only a replay, which has none to give, raises.
    expect(await big({}, { toolCallId: "c1" })).toHaveLength(5_000)
    await expect(big({}, { toolCallId: "c1" })).rejects.toBeInstanceOf(LedgerResultUnstorableError)
    expect(runs).toBe(1)
    const rows = []
    for await (const e of storage.list()) rows.push(entryToRow(e))
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ terminal_outcome: "COMPLETED", status: "completed", result: null })
    expect(String(rows[0]?.error)).toContain("max_row_bytes")
  })
})
