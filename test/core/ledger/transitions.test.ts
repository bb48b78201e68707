// Rows the ledger writes come from machine/transitions.ts. These pin the rules where the inline copies used to differ,
// and the one field list the codec reads and writes.

import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { ENTRY_FIELDS, entryFromRow, entryToRow, newEntry } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  MemoryLedgerStorage,
  ReconcileResult,
} from "../../../src/core/index.ts"
import { failedRow, RELEASABLE_OUTCOMES } from "../../../src/core/ledger/machine/transitions.ts"
import { ENTRY_DEFAULTS } from "../../../src/core/ledger/model/entry.ts"
import { ManualClock } from "../../../src/testing.ts"

const quiet = { onWarning: () => {} }
const binding = {
  agentId: "a",
  policyVersion: "1",
  sideEffectClass: "keyed_mutate",
} as const
const python = JSON.parse(readFileSync("test/fixtures/python-ledger.json", "utf8")) as Record<
  string,
  Record<string, unknown>
>

describe("one field list", () => {
  it("covers every key of a Python-written row, in the original's order, and round-trips it", () => {
    const current = Object.values(python).filter((row) => "schema_version" in row)
    expect(current.length).toBeGreaterThan(2)
    for (const row of current) {
      expect(Object.values(ENTRY_FIELDS).map((f) => f.key)).toEqual(Object.keys(row))
      expect(entryToRow(entryFromRow(row))).toEqual(row)
    }
  })

  it("the defaults a new row starts with are the codec's reading of a row that has only its ids", () => {
    const read = entryFromRow({ request_id: "", tool: "", status: "in-flight", schema_version: 2 })
    expect(ENTRY_DEFAULTS).toEqual(read)
    expect(newEntry({ requestId: "r", tool: "t" }, 7)).toEqual({
      ...entryFromRow({ request_id: "r", tool: "t", status: "in-flight", schema_version: 2 }),
      startedAt: 7,
    })
  })

  it("a new entry has exactly the fields of the list", () => {
    expect(Object.keys(newEntry({ requestId: "r", tool: "t" }, 1)).sort()).toEqual(
      Object.keys(ENTRY_FIELDS).sort(),
    )
  })

  // EXPIRED is stored by legacy rows (and a field repair of one): such a row must be releasable too.
  it("one list of releasable outcomes: everything but COMPLETED", () => {
    expect([...RELEASABLE_OUTCOMES].sort()).toEqual(
      ["BLOCKED", "EXPIRED", "FAILED_AFTER_EFFECT", "FAILED_BEFORE_EFFECT", "IN_FLIGHT", "UNKNOWN"].sort(),
    )
  })
})

describe("rules the old inline rows disagreed on", () => {
  it("a reconciler's COMPLETED result is stored as JSON, like a body's (was stored raw)", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock(1000)
    const reconciler = {
      reconcile: () => ReconcileResult.completed({ at: new Date(0), gone: undefined } as never),
    }
    const ledger = new ActionLedger({ storage, clock, reconciler, leaseTtl: 10, ...quiet })
    const tool = ledger.tool({ name: "pay", binding }, async (_a: { n: number }, tx) => {
      await tx.markMaybeCrossed()
      await tx.recordExternalOperation("op_1")
      throw new Error("network dropped")
    })
    await expect(tool({ n: 1 }, { toolCallId: "c1" })).rejects.toThrow("network dropped")
    const out = await tool({ n: 1 }, { toolCallId: "c1" })
    expect(out).toEqual({ at: "1970-01-01T00:00:00.000Z" })
    const [row] = await ledger.listTransitions()
    expect(row?.terminalOutcome).toBe("COMPLETED")
    expect(row?.result).toEqual({ at: "1970-01-01T00:00:00.000Z" })
    expect(JSON.parse(JSON.stringify(row?.result))).toEqual(row?.result)
  })

  // The original's complete() and release() replace the outcome fields and leave `error` as it was (checked by
  // running its code: a reconciler's COMPLETED and a release "completed" of an UNKNOWN row both keep
  // 'RuntimeError: provider timeout'). This package used to write null there.
  it("a row a reconciler or an operator settles as COMPLETED keeps its failure's error, as the original's does", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock(1000)
    let verdict = ReconcileResult.unknown()
    const ledger = new ActionLedger({ storage, clock, reconciler: { reconcile: () => verdict }, ...quiet })
    let runs = 0
    const tool = ledger.tool({ name: "pay", binding }, async (a: { n: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        await tx.recordExternalOperation(`op_${a.n}`)
        // A failure text that names the unstorable error must not read as this package's unstorable marker.
        throw Object.assign(new Error(`provider timeout ${a.n}`), {
          name: a.n === 1 ? "Error" : "LedgerResultUnstorableError",
        })
      }),
    )
    for (const n of [1, 2, 3])
      await expect(tool({ n }, { toolCallId: `c${n}` })).rejects.toThrow("provider timeout")
    verdict = ReconcileResult.completed({ paid: true })
    expect(await tool({ n: 1 }, { toolCallId: "c1" })).toEqual({ paid: true })
    expect(await tool({ n: 2 }, { toolCallId: "c2" })).toEqual({ paid: true })
    const [third] = await ledger.listTransitions({ outcome: "UNKNOWN" })
    const released = await ledger.release(third?.requestId as string, {
      verified: "completed",
      result: { paid: "ch_3" },
      by: "ops",
      reason: "seen at the provider",
    })
    expect(released.error).toBe("LedgerResultUnstorableError: provider timeout 3")
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => [r.terminalOutcome, r.error, r.result]).sort()).toEqual([
      ["COMPLETED", "Error: provider timeout 1", { paid: true }],
      ["COMPLETED", "LedgerResultUnstorableError: provider timeout 2", { paid: true }],
      ["COMPLETED", "LedgerResultUnstorableError: provider timeout 3", { paid: "ch_3" }],
    ])
    expect(await tool({ n: 3 }, { toolCallId: "c3" })).toEqual({ paid: "ch_3" })
    expect(runs).toBe(3)
  })

  it("a lapsed lease converted to BLOCKED is mark_blocked's row: finished_at set, failedRow's phase rule", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ storage, clock, leaseTtl: 10, ...quiet })
    let runs = 0
    const tool = ledger.tool({ name: "pay", binding }, async (_a: { n: number }, tx) => {
      runs++
      await tx.markMaybeCrossed()
      return new Promise<never>(() => {}) // the worker "dies" inside the effect
    })
    void tool({ n: 1 }, { toolCallId: "c1" })
    await new Promise((r) => setTimeout(r, 20))
    const [held] = await ledger.listTransitions()
    clock.advance(11)
    await expect(tool({ n: 1 }, { toolCallId: "c1" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    const row = await ledger.get(held?.requestId as string)
    expect(runs).toBe(1)
    expect(row?.terminalOutcome).toBe("BLOCKED")
    expect(row?.finishedAt).toBe(1011)
    expect(row?.leaseUntil).toBeNull()
    const expected = failedRow(held as never, "BLOCKED", row?.error as string, 1011)
    expect(row).toEqual(expected)
  })

  it("an identity-conflict give-up is failRow's row (the lease ends, as the original's fail() ends it)", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ storage, clock, leaseTtl: 10, ...quiet })
    const tool = ledger.tool({ name: "pay", binding }, async (a: { n: number }) => a.n)
    await tool({ n: 1 }, { toolCallId: "c1" })
    await expect(tool({ n: 2 }, { toolCallId: "c1" })).rejects.toBeInstanceOf(LedgerIdentityConflictError)
    const rows = await ledger.listTransitions({ outcome: "FAILED_BEFORE_EFFECT" })
    expect(rows).toHaveLength(1)
    const failed = rows[0] as (typeof rows)[number]
    const claimed = {
      ...failed,
      terminalOutcome: "IN_FLIGHT",
      status: "in-flight",
      finishedAt: null,
      error: null,
    }
    expect(failed.leaseUntil).toBeNull()
    expect(failed).toEqual(failedRow(claimed as never, "FAILED_BEFORE_EFFECT", failed.error as string, 1000))
  })

  it("a body's failure ends the lease in the row, as the original's fail() / mark_unknown() write it", async () => {
    const storage = new MemoryLedgerStorage()
    const clock = new ManualClock(1000)
    const ledger = new ActionLedger({ storage, clock, leaseTtl: 10, ...quiet })
    const tool = ledger.tool({ name: "pay", binding }, async (a: { n: number }, tx) => {
      if (a.n > 0) await tx.markMaybeCrossed()
      if (a.n > 1) await tx.markCrossed()
      throw new Error("boom")
    })
    for (const n of [0, 1, 2]) await expect(tool({ n }, { toolCallId: `c${n}` })).rejects.toThrow("boom")
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => [r.terminalOutcome, r.leaseUntil, r.finishedAt]).sort()).toEqual([
      ["FAILED_AFTER_EFFECT", null, 1000],
      ["FAILED_BEFORE_EFFECT", null, 1000],
      ["UNKNOWN", null, 1000],
    ])
  })
})
