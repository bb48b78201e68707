// A harness tool gets no TransitionContext of its own, so one that failed after its effect (a charge whose answer was
// lost) was recorded FAILED_BEFORE_EFFECT: an operator trusting the row could release it not_executed and charge
// again. ToolContext.sideEffect() records that the effect may have started first, so such a call reads UNKNOWN.
import { describe, expect, it } from "vitest"
import { type HarnessTool, type ModelClient, RunFailed, runPlan } from "../../../src/core/harness/index.ts"
import { ActionLedger, type LedgerEntry, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { task } from "./helpers.ts"

const runId = `run:${"ef".repeat(16)}`
const PAY = { agentId: "t", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" } as const

/** Calls `pay` once, then answers. */
const model: ModelClient = {
  async request(req) {
    return req.messages.some((m) => m.role === "tool")
      ? { parts: [{ type: "text", text: "done" }] }
      : { parts: [{ type: "tool_call", id: "c1", name: "pay", args: { amount: 5 } }] }
  },
}

/** `pay` charges, then fails as a lost answer does; `marked`: inside ctx.sideEffect(). */
function pay(charges: number[], marked: boolean): HarnessTool {
  return {
    name: "pay",
    parameters: { type: "object" },
    binding: PAY,
    execute: async (args, ctx) => {
      const charge = () => {
        charges.push(args.amount as number)
        throw new Error("gateway: connection reset after the charge")
      }
      return marked ? ctx.sideEffect(charge) : charge()
    },
  }
}

async function payRow(marked: boolean): Promise<{ row: LedgerEntry; charges: number[] }> {
  const storage = new MemoryLedgerStorage()
  const ledger = new ActionLedger({ storage, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })
  const charges: number[] = []
  const err = await runPlan(
    { tasks: [task("a")], output_task_id: "a" },
    { model, ledger, tools: [pay(charges, marked)] },
    { run_id: runId },
  ).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(RunFailed)
  const rows: LedgerEntry[] = []
  for await (const r of storage.list()) if (r.tool === "pay") rows.push(r)
  expect(rows).toHaveLength(1)
  return { row: rows[0] as LedgerEntry, charges }
}

describe("ToolContext.sideEffect()", () => {
  it("a durable tool that fails after its effect reads UNKNOWN (maybe_crossed), not failed before it", async () => {
    const { row, charges } = await payRow(true)
    expect(charges).toEqual([5])
    expect([row.terminalOutcome, row.sideEffectBoundary]).toEqual(["UNKNOWN", "maybe_crossed"])
  })

  it("without it the row says the effect never started, which is what it guards against", async () => {
    const { row, charges } = await payRow(false)
    expect(charges).toEqual([5])
    expect([row.terminalOutcome, row.sideEffectBoundary]).toEqual(["FAILED_BEFORE_EFFECT", "not_crossed"])
  })

  it("without a ledger it runs the effect and returns its value", async () => {
    let seen: unknown
    const tool: HarnessTool = {
      name: "pay",
      parameters: { type: "object" },
      execute: async (_args, ctx) => {
        seen = await ctx.sideEffect(() => "charged")
        return seen
      },
    }
    const r = await runPlan({ tasks: [task("a")], output_task_id: "a" }, { model, tools: [tool] })
    expect(seen).toBe("charged")
    expect(r.output).toBe("done")
  })
})
