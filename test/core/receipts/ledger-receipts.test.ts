import { describe, expect, it } from "vitest"
import {
  ActionLedger,
  LedgerReceiptUnsignedError,
  LedgerReleaseRefusedError,
  type LedgerStorage,
  MemoryLedgerStorage,
  ReceiptAppendError,
} from "../../../src/core/index.ts"
import {
  type AuditReceiptRecord,
  type ChainSealer,
  hmacReceiptSigner,
  MemoryReceiptStore,
  ReceiptEmitter,
  type ReceiptStore,
  verifyReceipts,
} from "../../../src/receipts.ts"
import { ManualClock } from "../../../src/testing.ts"

const KEY = "ledger-receipts-key"
const binding = { agentId: "payment-agent", policyVersion: "v1", sideEffectClass: "keyed_mutate" } as const

/** Counts durable writes to the ledger and appends to the receipt store. */
function setup(options: { failAppend?: () => boolean; failSign?: () => boolean } = {}) {
  const inner = new MemoryLedgerStorage()
  const counts = { writes: 0, appends: 0 }
  const storage: LedgerStorage = {
    get: (id) => inner.get(id),
    set: (e) => {
      counts.writes++
      return inner.set(e)
    },
    tryClaimInflight: (e, ttl, now, o) => {
      counts.writes++
      return inner.tryClaimInflight(e, ttl, now, o)
    },
    tryTransition: (n, e) => {
      counts.writes++
      return inner.tryTransition(n, e)
    },
    list: (o) => inner.list(o),
    findByDispatchId: (d) => inner.findByDispatchId(d),
  }
  const memory = new MemoryReceiptStore()
  const store: ReceiptStore = {
    append: (record: AuditReceiptRecord, chain?: ChainSealer) => {
      counts.appends++
      if (options.failAppend?.()) return Promise.reject(new Error("receipt store down"))
      return memory.append(record, chain)
    },
    list: (o) => memory.list(o),
    listPage: (o) => memory.listPage(o),
  }
  const clock = new ManualClock()
  const hmac = hmacReceiptSigner(KEY)
  const signer = {
    ...hmac,
    sign: (text: string) =>
      options.failSign?.() ? Promise.reject(new Error("KMS unavailable")) : hmac.sign(text),
  }
  const receipts = new ReceiptEmitter({ signer, store, agentId: "payment-agent" })
  const warnings: string[] = []
  const ledger = new ActionLedger({ storage, receipts, clock, onWarning: (w) => warnings.push(w) })
  return { ledger, counts, memory, clock, warnings }
}

describe("receipts emitted by the action ledger", () => {
  it("a ledgered call costs 2 writes + 1 receipt append; with sideEffect() 3 + 1; a replay appends nothing", async () => {
    const { ledger, counts, memory } = setup()
    let runs = 0
    const pay = ledger.tool({ name: "send_payment", binding }, async (args: { amount: number }) => {
      runs++
      return { charge: `ch_${args.amount}` }
    })
    await pay({ amount: 1 }, { toolCallId: "c1" })
    expect(counts).toEqual({ writes: 2, appends: 1 })

    const pay2 = ledger.tool({ name: "send_payment2", binding }, async (args: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        return args.amount
      }),
    )
    await pay2({ amount: 2 }, { toolCallId: "c2" })
    expect(counts).toEqual({ writes: 5, appends: 2 })

    // A replay: one claim attempt that finds COMPLETED (it writes nothing) and no receipt.
    expect(await pay({ amount: 1 }, { toolCallId: "c1" })).toEqual({ charge: "ch_1" })
    expect(counts).toEqual({ writes: 6, appends: 2 })
    expect(runs).toBe(2)

    const receipts = await memory.list()
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.receiptRef).sort()).toEqual(receipts.map((r) => r.receipt_id).sort())
    expect(receipts[0]).toMatchObject({
      action: "send_payment",
      action_kind: "tool",
      status: "completed",
      outputs: { charge: "ch_1" },
      error: null,
      timestamp: rows.find((r) => r.tool === "send_payment")?.finishedAt,
    })
    expect(await verifyReceipts(receipts, { hmac: KEY }, { requireChain: true })).toMatchObject({
      ok: true,
      valid: 2,
    })
  })

  it("FAILED_BEFORE_EFFECT and FAILED_AFTER_EFFECT get failed receipts; UNKNOWN gets none", async () => {
    const { ledger, memory } = setup()
    const before = ledger.tool({ name: "before", binding }, async () => {
      throw new TypeError("bad input")
    })
    const after = ledger.tool({ name: "after", binding }, async (_a: Record<string, never>, tx) => {
      await tx.sideEffect(() => 1)
      throw new Error("post-processing failed")
    })
    const unknown = ledger.tool({ name: "unknown", binding }, async (_a: Record<string, never>, tx) =>
      tx.sideEffect(() => {
        throw new Error("timeout mid-charge")
      }),
    )
    await expect(before({}, { toolCallId: "b" })).rejects.toThrow("bad input")
    await expect(after({}, { toolCallId: "a" })).rejects.toThrow("post-processing")
    await expect(unknown({}, { toolCallId: "u" })).rejects.toThrow("timeout")
    const rows = new Map((await ledger.listTransitions()).map((r) => [r.tool, r]))
    expect(rows.get("before")?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(rows.get("after")?.terminalOutcome).toBe("FAILED_AFTER_EFFECT")
    expect(rows.get("unknown")?.terminalOutcome).toBe("UNKNOWN")
    expect(rows.get("unknown")?.receiptRef).toBeNull()
    const receipts = await memory.list()
    expect(receipts.map((r) => [r.action, r.status, r.error, r.outputs])).toEqual([
      ["before", "failed", "TypeError: bad input", null],
      ["after", "failed", "Error: post-processing failed", null],
    ])
    expect(receipts.map((r) => r.receipt_id)).toEqual([
      rows.get("before")?.receiptRef,
      rows.get("after")?.receiptRef,
    ])
  })

  it("an operator release emits the original's release receipt", async () => {
    const { ledger, memory } = setup()
    const t = ledger.tool({ name: "charge", binding }, async (_a: Record<string, never>, tx) =>
      tx.sideEffect(() => {
        throw new Error("ambiguous")
      }),
    )
    await expect(t({}, { toolCallId: "x" })).rejects.toThrow()
    const [row] = await ledger.listTransitions()
    const released = await ledger.release(row?.requestId ?? "", {
      verified: "completed",
      result: { charge: "ch_9" },
      by: "ops@example",
      reason: "seen in the provider dashboard",
    })
    const receipts = await memory.list()
    expect(receipts).toHaveLength(1)
    expect(released.receiptRef).toBe(receipts[0]?.receipt_id)
    // The original's release receipt carries the row's error, which its release keeps (checked by running it:
    // error 'RuntimeError: ambiguous' on both the row and the receipt); this package used to sign null.
    expect(released.error).toBe("Error: ambiguous")
    expect(receipts[0]).toMatchObject({
      status: "completed",
      error: "Error: ambiguous",
      outputs: {
        operator_release: true,
        verified: "completed",
        resolved_by: "ops@example",
        resolution_reason: "seen in the provider dashboard",
        released_from_outcome: "UNKNOWN",
        result: { charge: "ch_9" },
      },
    })
    expect((await ledger.get(row?.requestId ?? ""))?.receiptRef).toBe(receipts[0]?.receipt_id)
  })

  it("a stale worker whose completion loses the CAS leaves no receipt", async () => {
    const { ledger, memory, clock } = setup()
    const claim = await ledger.claim({
      tool: "t",
      requestId: "r1",
      binding: { ...binding, sideEffectClass: "read" },
    })
    if (!claim.owned) throw new Error("expected to own the claim")
    clock.advance(7200)
    const second = await ledger.claim({
      tool: "t",
      requestId: "r1",
      binding: { ...binding, sideEffectClass: "read" },
    })
    expect(second.owned).toBe(true)
    await expect(
      ledger.complete("r1", 1, { fence: claim.entry.fence, owner: claim.entry.owner }),
    ).rejects.toThrow()
    expect(await memory.list()).toEqual([])
  })

  it("a failed append: the row names the receipt, the call reports it, a retry replays without running", async () => {
    let down = true
    const { ledger, memory } = setup({ failAppend: () => down })
    let runs = 0
    const t = ledger.tool({ name: "t", binding }, async () => ++runs)
    const err = await t({}, { toolCallId: "z" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ReceiptAppendError)
    expect((err as ReceiptAppendError).code).toBe("receipt_append_failed")
    const [row] = await ledger.listTransitions()
    expect(row?.terminalOutcome).toBe("COMPLETED")
    expect(row?.receiptRef).toBe((err as ReceiptAppendError).receiptId)
    down = false
    expect(await t({}, { toolCallId: "z" })).toBe(1)
    expect(runs).toBe(1)
    expect(await memory.list()).toEqual([])
  })

  it("a signer outage: the outcome is recorded without a receipt, the call reports it, a retry replays", async () => {
    let down = true
    const { ledger, memory, clock } = setup({ failSign: () => down })
    let runs = 0
    const t = ledger.tool({ name: "t", binding }, async () => ({ charge: `ch_${++runs}` }))
    const err = await t({}, { toolCallId: "s" }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerReceiptUnsignedError)
    expect((err as LedgerReceiptUnsignedError).code).toBe("receipt_unsigned")
    expect((err as Error).cause).toMatchObject({ message: "KMS unavailable" })
    const f = ledger.tool({ name: "f", binding }, async () => {
      throw new Error("declined")
    })
    await expect(f({}, { toolCallId: "f" })).rejects.toThrow("declined")
    const rows = new Map((await ledger.listTransitions()).map((r) => [r.tool, r]))
    expect(rows.get("f")).toMatchObject({ terminalOutcome: "FAILED_BEFORE_EFFECT", receiptRef: null })
    expect(rows.get("t")).toMatchObject({
      terminalOutcome: "COMPLETED",
      result: { charge: "ch_1" },
      sideEffectBoundary: "crossed",
      receiptRef: null,
    })
    down = false
    clock.advance(7200) // well past the lease: an IN_FLIGHT row would now block or run again
    expect(await t({}, { toolCallId: "s" })).toEqual({ charge: "ch_1" })
    expect(runs).toBe(1)
    expect(await memory.list()).toEqual([])
  })

  it("a signer outage on a failure's write warns that the failure is recorded without its receipt", async () => {
    const { ledger, warnings } = setup({ failSign: () => true })
    const f = ledger.tool({ name: "f", binding }, async () => {
      throw new Error("declined")
    })
    await expect(f({}, { toolCallId: "f" })).rejects.toThrow("declined")
    const [row] = await ledger.listTransitions()
    expect(row?.terminalOutcome).toBe("FAILED_BEFORE_EFFECT")
    expect(warnings).toEqual([
      `the failure of 'f' request '${row?.requestId}' is recorded but its receipt was not signed: ` +
        "Error: KMS unavailable. Restore the signer",
    ])
  })

  it("a signer outage refuses a release (typed, nothing written); the release succeeds once it recovers", async () => {
    let down = false
    const { ledger, memory } = setup({ failSign: () => down })
    const t = ledger.tool({ name: "t", binding }, async (_a: Record<string, never>, tx) =>
      tx.sideEffect(() => {
        throw new Error("ambiguous")
      }),
    )
    await expect(t({}, { toolCallId: "r" })).rejects.toThrow("ambiguous")
    const [before] = await ledger.listTransitions()
    const id = before?.requestId ?? ""
    expect(before?.terminalOutcome).toBe("UNKNOWN")
    down = true
    const options = { verified: "completed", result: 1, by: "ops@example", reason: "seen" } as const
    const err = await ledger.release(id, options).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(LedgerReleaseRefusedError)
    expect((err as LedgerReleaseRefusedError).code).toBe("ledger_release_refused")
    expect((err as Error).cause).toMatchObject({ message: "KMS unavailable" })
    expect(await ledger.get(id)).toEqual(before)
    down = false
    expect(await ledger.release(id, options)).toMatchObject({ operatorResolution: "completed", result: 1 })
    expect(await memory.list()).toHaveLength(1)
  })
})
