// Guards apply inside plans: a bounded() tool's boundary error goes back to the model and the task continues; a
// ledgered tool keeps exactly-once under a redispatched call id.
import { describe, expect, it } from "vitest"
import { type HarnessTool, runPlan, ScriptedModel } from "../../../src/core/harness/index.ts"
import { ActionLedger, bounded, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { task } from "./helpers.ts"

describe("core guards inside a plan", () => {
  it("a bounded tool refuses bad arguments to the model, which corrects itself", async () => {
    const ran: number[] = []
    const guarded = bounded(
      async (args: { amount: number }) => {
        ran.push(args.amount)
        return { ok: true }
      },
      { name: "refund", schema: { amount: { type: "integer" } } },
    )
    const refund: HarnessTool = {
      name: "refund",
      parameters: { type: "object" },
      execute: (args) => guarded(args as { amount: number }),
    }
    const model = new ScriptedModel({
      byTask: {
        t: [
          { tool_calls: [{ name: "refund", args: { amount: "lots" } }] },
          { tool_calls: [{ name: "refund", args: { amount: 50 } }] },
          { text: "refunded 50" },
        ],
      },
    })
    const r = await runPlan({ tasks: [task("t")], output_task_id: "t" }, { model, tools: [refund] })
    expect(r.output).toBe("refunded 50")
    expect(ran).toEqual([50])
    const feedback = model.requests[1]?.messages.at(-1)
    expect(feedback).toMatchObject({ role: "tool", is_error: true })
    expect((feedback as { content: string }).content).toContain("amount")
  })

  it("a ledgered tool runs once for a call id even when two tasks dispatch it", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let charges = 0
    const charge = ledger.tool(
      { name: "charge", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
      async (args: { order: string }) => {
        charges++
        return `charged ${args.order}`
      },
    )
    const tool: HarnessTool = {
      name: "charge",
      parameters: { type: "object" },
      execute: (args, ctx) =>
        charge(args as { order: string }, { toolCallId: ctx.call_id, signal: ctx.signal }),
    }
    const sameCall = { tool_calls: [{ name: "charge", args: { order: "o-1" }, id: "call_o1" }] }
    const model = new ScriptedModel({ fallback: [sameCall, { text: "ok" }] })
    const r = await runPlan(
      { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
      { model, tools: [tool] },
    )
    expect(r.status).toBe("succeeded")
    expect(charges).toBe(1)
    expect(r.usage.tool_calls).toBe(3)
  })
})
