// A row is judged by the gate of the binding it was claimed under. A re-send of its id under a caller-named or
// business-key id with another binding (a `read` class, none at all, another agent or policy version) picked a looser
// gate and ran an ambiguous payment again; over HTTP the binding is whatever the client sends.
import { describe, expect, it } from "vitest"
import { entryFromRow } from "../../../src/adapter-kit.ts"
import {
  ActionLedger,
  argsFingerprint,
  LedgerHardBlockError,
  MemoryLedgerStorage,
  type SideEffectClass,
  ToolTransitionBinding,
  transitionKey,
} from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const quiet = { onWarning: () => {} }
const binding = (sideEffectClass: SideEffectClass, policyVersion = "1") => ({
  agentId: "pay",
  policyVersion,
  sideEffectClass,
})

function payments() {
  const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
  const runs = { pay: 0, other: 0 }
  // The charge request went out and its answer was lost: the row is UNKNOWN, boundary maybe_crossed.
  const pay = ledger.tool(
    { name: "send_payment", binding: binding("non_idempotent_mutate") },
    async (_a: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs.pay++
        throw new Error("socket reset after the charge request")
      }),
  )
  const as = (b: ReturnType<typeof binding> | undefined) =>
    ledger.tool({ name: "send_payment", ...(b ? { binding: b } : {}) }, async (_a: { amount: number }) => {
      runs.other++
      return { forged: true }
    })
  return { ledger, runs, pay, as }
}

describe("a re-send under another binding cannot loosen the row's gate", () => {
  it("an ambiguous payment at an explicit id is refused to a read, an unbound or another policy's re-send", async () => {
    const { ledger, runs, pay, as } = payments()
    await expect(pay({ amount: 100 }, { requestId: "order-42" })).rejects.toThrow("socket reset")
    expect((await ledger.get("order-42"))?.terminalOutcome).toBe("UNKNOWN")
    await expect(pay({ amount: 100 }, { requestId: "order-42" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    for (const b of [
      binding("read"),
      undefined,
      binding("non_idempotent_mutate", "2"),
      binding("keyed_mutate"),
    ]) {
      await expect(as(b)({ amount: 100 }, { requestId: "order-42" })).rejects.toBeInstanceOf(
        LedgerHardBlockError,
      )
    }
    expect(runs).toEqual({ pay: 1, other: 0 })
    const row = await ledger.get("order-42")
    expect(row).toMatchObject({ terminalOutcome: "UNKNOWN", fence: 1 })
  })

  it("a business key (requestIdFrom) too: a read binding on the same key does not reclaim the row", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    let runs = 0
    const tool = (cls: SideEffectClass) =>
      ledger.tool(
        { name: "refund", binding: { ...binding(cls), requestIdFrom: "order_id" } },
        async (_a: { order_id: string }, tx) => {
          runs++
          await tx.markCrossed()
          throw new Error("gateway 502 after the refund was accepted")
        },
      )
    await expect(tool("keyed_mutate")({ order_id: "42" })).rejects.toThrow("gateway 502")
    expect((await ledger.get("refund:order_id:42"))?.terminalOutcome).toBe("FAILED_AFTER_EFFECT")
    await expect(tool("read")({ order_id: "42" })).rejects.toBeInstanceOf(LedgerHardBlockError)
    expect(runs).toBe(1)
  })

  it("a completed row still replays to any of them, and the same binding under a new tool-call id is judged as before", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    let runs = 0
    let down = true
    const upsert = (cls: SideEffectClass) =>
      ledger.tool({ name: "upsert", binding: binding(cls) }, async (a: { v: number }) => {
        runs++
        if (down) throw new Error("db down")
        return { stored: a.v }
      })
    // FAILED_BEFORE_EFFECT, not crossed: keyed_mutate may retry it. The row's key holds the first dispatch's id,
    // and the retry carries another: it is the same binding all the same.
    await expect(
      upsert("keyed_mutate")({ v: 1 }, { requestId: "row-7", toolCallId: "call_1" }),
    ).rejects.toThrow()
    down = false
    expect(await upsert("keyed_mutate")({ v: 1 }, { requestId: "row-7", toolCallId: "call_2" })).toEqual({
      stored: 1,
    })
    expect(runs).toBe(2)
    expect(await upsert("read")({ v: 1 }, { requestId: "row-7" })).toEqual({ stored: 1 })
    expect(
      await ledger.tool({ name: "upsert" }, async () => "ran")({ v: 1 }, { requestId: "row-7" }),
    ).toEqual({
      stored: 1,
    })
    expect(runs).toBe(2)
  })
})

describe("ids a caller can name", () => {
  it("a payment's derived id named as requestId by a read tool is judged by the payment's gate", async () => {
    const { ledger, runs, pay, as } = payments()
    await expect(pay({ amount: 100 }, { toolCallId: "call_1" })).rejects.toThrow("socket reset")
    const [row] = await ledger.listTransitions()
    expect(row?.terminalOutcome).toBe("UNKNOWN")
    const id = row?.requestId as string
    await expect(as(binding("read"))({ amount: 100 }, { requestId: id })).rejects.toBeInstanceOf(
      LedgerHardBlockError,
    )
    expect(runs).toEqual({ pay: 1, other: 0 })
  })

  it("a row claimed without a binding is not re-run by a read tool's re-send of its id", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    let runs = 0
    const pay = ledger.tool({ name: "send_payment" }, async (_a: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        runs++
        throw new Error("socket reset")
      }),
    )
    await expect(pay({ amount: 100 }, { toolCallId: "call_abc" })).rejects.toThrow("socket reset")
    expect((await ledger.get("call_abc"))?.terminalOutcome).toBe("UNKNOWN")
    const read = ledger.tool({ name: "send_payment", binding: binding("read") }, async () => {
      runs++
      return { forged: true }
    })
    await expect(read({ amount: 100 }, { requestId: "call_abc" })).rejects.toBeInstanceOf(
      LedgerHardBlockError,
    )
    expect(runs).toBe(1)
  })

  it("a derived id claimed first by an unbound call is not replayed as the payment's result", async () => {
    const { ledger, runs } = payments()
    let paid = 0
    const real = ledger.tool(
      { name: "send_payment", binding: binding("non_idempotent_mutate") },
      async (a: { amount: number }) => {
        paid++
        return { charged: a.amount }
      },
    )
    // The id the real call will derive, computed by a squatter who knows its arguments and tool-call id.
    const probe = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    await probe.tool({ name: "send_payment", binding: binding("non_idempotent_mutate") }, async () => 1)(
      { amount: 100 },
      { toolCallId: "call_9" },
    )
    const id = (await probe.listTransitions())[0]?.requestId as string
    for (const b of [undefined]) {
      const storage = new MemoryLedgerStorage()
      const l = new ActionLedger({ storage, ...quiet })
      await l.tool({ name: "send_payment", ...(b ? { binding: b } : {}) }, async () => ({ id: "pi_forged" }))(
        { amount: 100 },
        { requestId: id },
      )
      const victim = l.tool({ name: "send_payment", binding: binding("non_idempotent_mutate") }, async () => {
        paid++
        return "paid"
      })
      await expect(victim({ amount: 100 }, { toolCallId: "call_9" })).rejects.toMatchObject({
        code: "args_drift",
      })
    }
    expect(await real({ amount: 100 }, { toolCallId: "call_9" })).toEqual({ charged: 100 })
    expect(await real({ amount: 100 }, { toolCallId: "call_9" })).toEqual({ charged: 100 })
    expect(paid).toBe(1)
    expect(runs).toEqual({ pay: 0, other: 0 })
  })
})

describe("numbers JSON cannot hold", () => {
  it("Infinity, -Infinity and NaN arguments are refused before the claim, not keyed as their strings", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    let runs = 0
    const pay = ledger.tool(
      { name: "pay", binding: binding("non_idempotent_mutate") },
      async (a: { memo: unknown }) => {
        runs++
        return { memo: a.memo }
      },
    )
    expect(await pay({ memo: "Infinity" }, { requestId: "p-1" })).toEqual({ memo: "Infinity" })
    for (const memo of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, [1, Number.NaN]]) {
      await expect(pay({ memo }, { requestId: "p-1" })).rejects.toMatchObject({ code: "invalid_option" })
      await expect(pay({ memo }, { requestId: `p-${String(memo)}` })).rejects.toMatchObject({
        code: "invalid_option",
      })
    }
    expect(runs).toBe(1)
    expect((await ledger.listTransitions()).length).toBe(1)
  })
})

describe("a foreign call never settles the row for its own binding", () => {
  it("an operator's not_executed release and a lapsed lease are left to the payment's redispatch", async () => {
    const clock = new ManualClock()
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), clock, leaseTtl: 30, ...quiet })
    const args = { amount: 100 }
    const runs = { pay: 0, read: 0 }
    const tool = (cls: SideEffectClass) =>
      ledger.tool({ name: "charge", binding: binding(cls) }, async (_a: typeof args, tx) => {
        runs[cls === "read" ? "read" : "pay"]++
        await tx.sideEffect(async () => {})
        return "charged"
      })
    // Two workers die holding their claims; one row is released not_executed, the other's lease just lapses.
    await ledger.claim({
      tool: "charge",
      args,
      requestId: "pay-1",
      binding: binding("non_idempotent_mutate"),
    })
    await ledger.claim({ tool: "charge", args, requestId: "up-1", binding: binding("idempotent_mutate") })
    clock.advance(31)
    await ledger.markWorkerDeadFor("pay-1", { by: "ops", reason: "pod gone", overrideHeartbeat: true })
    await ledger.release("pay-1", { verified: "not_executed", by: "ops", reason: "no charge" })
    for (const id of ["pay-1", "pay-1", "up-1"]) {
      const before = await ledger.get(id)
      await expect(tool("read")(args, { requestId: id })).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(await ledger.get(id)).toEqual(before)
    }
    expect(await tool("non_idempotent_mutate")(args, { requestId: "pay-1" })).toBe("charged")
    expect(await tool("idempotent_mutate")(args, { requestId: "up-1" })).toBe("charged")
    expect(runs).toEqual({ pay: 2, read: 0 })
  })
})

describe("a business key's row whose effect id holds context its kwargs do not", () => {
  const init = {
    ...binding("non_idempotent_mutate"),
    retryPermission: "safe_retry",
    requestIdFrom: "order_id",
  } as const
  const kwargs = { order_id: "o-1", amount: 5 }
  // The original's LangGraph row (dispatch_scope, execution_scope) and its config.run("r1") row: neither in kwargs.
  it.each([
    [{ threadId: "th-1", runId: "", node: "" }, "call_abc", { toolCallId: "call_abc", threadId: "th-1" }],
    [{ threadId: "r1", runId: "r1", node: "" }, null, { threadId: "r1", runId: "r1" }],
  ])(
    "a Python row failed before its effect is retried by a redispatch in its context %#",
    async (scope, dispatchId, meta) => {
      const effectId = transitionKey({
        tool: "charge",
        binding: ToolTransitionBinding.forTool(init),
        argsFingerprint: argsFingerprint(kwargs, [], null),
        scope,
        dispatchId,
      })
      const storage = new MemoryLedgerStorage()
      await storage.set(
        entryFromRow({
          request_id: "charge:order_id:o-1",
          tool: "charge",
          args: [],
          kwargs,
          status: "failed",
          started_at: 1_800_000_000,
          owner: "py-host:1",
          idempotency_key: "charge:order_id:o-1",
          side_effect_boundary: "not_crossed",
          terminal_outcome: "FAILED_BEFORE_EFFECT",
          fence: 1,
          error: "ConnectionError: provider unreachable",
          effect_protocol_required: true,
          effect_id: effectId,
          schema_version: 2,
          effect_phase: "ABORTED",
          decision: { allowed: true, verdicts: [], denied_reasons: [] },
        }),
      )
      const ledger = new ActionLedger({ storage, ...quiet })
      let runs = 0
      const charge = ledger.tool({ name: "charge", binding: init }, async () => ++runs)
      // Without the original's context the effect id cannot be reproduced: fail closed.
      await expect(charge(kwargs)).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(await charge(kwargs, meta)).toBe(1)
    },
  )

  it("a JavaScript retry of a key whose arguments include one named node, run_id or tool_call_id", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
    let runs = 0
    const restart = ledger.tool(
      { name: "restart", binding: { ...init, requestIdFrom: "ticket" } },
      async (_a: Record<string, string>) => {
        if (++runs === 1) throw new Error("provider 503, nothing done")
        return "ok"
      },
    )
    for (const name of ["node", "run_id", "tool_call_id"]) {
      runs = 0
      const args = { ticket: `T-${name}`, [name]: "web-1" }
      await expect(restart(args, { toolCallId: `c-${name}` })).rejects.toThrow("provider 503")
      expect(await restart(args, { toolCallId: `c-${name}` })).toBe("ok")
    }
  })

  it("a released business-key payment whose arguments include run_id or node re-runs once under a new tool-call id", async () => {
    for (const name of ["batch", "run_id", "node"]) {
      const storage = new MemoryLedgerStorage()
      const ledger = new ActionLedger({ storage, onWarning: () => {} })
      const binding = {
        agentId: "ops",
        policyVersion: "1",
        sideEffectClass: "non_idempotent_mutate",
        requestIdFrom: "order_id",
      } as const
      let charges = 0
      let crash = true
      const pay = ledger.tool({ name: "pay", binding }, async (_a: Record<string, string | number>, tx) =>
        tx.sideEffect(async () => {
          charges++
          if (crash) throw new Error("provider timeout")
          return { charged: true }
        }),
      )
      const args = { order_id: "o-1", amount: 5, [name]: "r-7" }
      await expect(pay(args, { toolCallId: "call_1" })).rejects.toThrow("provider timeout")
      await expect(pay(args, { toolCallId: "call_2" })).rejects.toBeInstanceOf(LedgerHardBlockError)
      await ledger.release("pay:order_id:o-1", { verified: "not_executed", by: "alice", reason: "no charge" })
      crash = false
      // The payment's own redispatch, in a new model turn: the release is its to use, once.
      expect(await pay(args, { toolCallId: "call_3" })).toEqual({ charged: true })
      expect(await pay(args, { toolCallId: "call_4" })).toEqual({ charged: true })
      expect([name, charges]).toEqual([name, 2])
    }
  })

  it("a released payment whose arguments include request_id or tool_call_id, first sent without a tool-call id, re-runs once", async () => {
    for (const [name, idMeta] of [
      ["request_id", {}],
      ["tool_call_id", {}],
      ["tool_call_id", { requestId: "order-o-1" }],
    ] as const) {
      const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
      let charges = 0
      let crash = true
      const tool = (cls: SideEffectClass) =>
        ledger.tool(
          { name: "pay", binding: { ...binding(cls), requestIdFrom: "order_id" } },
          async (_a: Record<string, string>, tx) =>
            tx.sideEffect(async () => {
              charges++
              if (crash) throw new Error("provider timeout")
              return { charged: true }
            }),
        )
      // The argument, not metadata: the row's kwargs hold it where a dispatch id would be.
      const args = { order_id: "o-1", [name]: "prov-9" }
      await expect(tool("non_idempotent_mutate")(args, idMeta)).rejects.toThrow("provider timeout")
      const [row] = await ledger.listTransitions()
      expect(row?.terminalOutcome).toBe("UNKNOWN")
      const id = row?.requestId as string
      await ledger.release(id, { verified: "not_executed", by: "alice", reason: "no charge" })
      crash = false
      // A read binding's re-send of the id is still another binding: refused, the release left alone.
      const released = await ledger.get(id)
      await expect(tool("read")(args, idMeta)).rejects.toBeInstanceOf(LedgerHardBlockError)
      expect(await ledger.get(id)).toEqual(released)
      // The payment's own redispatch in a new model turn uses the release, once.
      const pay = tool("non_idempotent_mutate")
      expect(await pay(args, { ...idMeta, toolCallId: "call_2" })).toEqual({ charged: true })
      expect(await pay(args, { ...idMeta, toolCallId: "call_3" })).toEqual({ charged: true })
      expect([name, idMeta, charges]).toEqual([name, idMeta, 2])
    }
  })

  it("a released payment first sent without metadata re-runs once when its redispatch names the row's id", async () => {
    for (const name of ["request_id", "tool_call_id"]) {
      const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
      let charges = 0
      const tool = (cls: SideEffectClass) =>
        ledger.tool(
          { name: "pay", binding: { ...binding(cls), requestIdFrom: "order_id" } },
          async (_a, tx) =>
            tx.sideEffect(async () => {
              if (++charges === 1) throw new Error("provider timeout")
              return { charged: true }
            }),
        )
      const args = { order_id: "o-1", [name]: "prov-9" }
      await expect(tool("non_idempotent_mutate")(args)).rejects.toThrow("provider timeout")
      const id = "pay:order_id:o-1"
      await ledger.release(id, { verified: "not_executed", by: "alice", reason: "no charge" })
      await expect(tool("read")(args, { requestId: id })).rejects.toBeInstanceOf(LedgerHardBlockError)
      const pay = tool("non_idempotent_mutate")
      expect(await pay(args, { requestId: id })).toEqual({ charged: true })
      expect(await pay(args, { requestId: id })).toEqual({ charged: true })
      expect([name, charges]).toEqual([name, 2])
    }
  })

  it("a completed payment whose arguments hold an empty request_id replays under a new tool-call id", async () => {
    for (const value of ["", " "]) {
      const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), ...quiet })
      let charges = 0
      const pay = ledger.tool(
        { name: "pay", binding: { ...binding("non_idempotent_mutate"), requestIdFrom: "order_id" } },
        async (_a: Record<string, string>, tx) => tx.sideEffect(async () => ({ charged: ++charges })),
      )
      const args = { order_id: "o-1", request_id: value }
      expect(await pay(args)).toEqual({ charged: 1 })
      expect(await pay(args, { toolCallId: "call_2" })).toEqual({ charged: 1 })
      expect(charges).toBe(1)
    }
  })
})
