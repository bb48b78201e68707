// Guards apply inside plans: a bounded() tool's boundary error goes back to the model and the task continues; a
// ledgered tool keeps exactly-once under a redispatched call id.
import { describe, expect, it } from "vitest"
import { type HarnessTool, runPlan, ScriptedModel } from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { bounded } from "../../../src/tools.ts"
import { checkInvariants, failed, recorder, task } from "./helpers.ts"

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

describe("durable runs fail closed", () => {
  it("a store outage fails the run before any model request, with a start event before every terminal one", async () => {
    const down = new MemoryLedgerStorage()
    const broken = Object.assign(Object.create(down) as MemoryLedgerStorage, {
      get: () => Promise.reject(new Error("ECONNREFUSED")),
      tryClaimInflight: () => Promise.reject(new Error("ECONNREFUSED")),
    })
    const ledger = new ActionLedger({ storage: broken, onWarning: () => {} })
    const model = new ScriptedModel()
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(
        { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
        { model, ledger },
        { onEvent },
      ),
    )
    expect(err.result.status).toBe("failed")
    expect(err.result.failure?.error_type).toBe("LedgerStorageUnavailableError")
    expect(model.requests).toHaveLength(0)
    checkInvariants(events, err.result, 3)
  })

  it("an in-process durable rerun with the same run id replays everything", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const model = new ScriptedModel({ fallback: [{ text: "x", usage: { input_tokens: 3 } }] })
    const plan = { tasks: [task("a"), task("b", ["a"])], output_task_id: "b" }
    const first = await runPlan(plan, { model, ledger }, { run_id: "run:00000000000000000000000000000001" })
    const second = await runPlan(plan, { model, ledger }, { run_id: "run:00000000000000000000000000000001" })
    expect(model.requests).toHaveLength(2)
    expect(second.output).toBe(first.output)
    expect(second.usage).toEqual(first.usage)
    expect(second.tasks.every((t) => t.replayed)).toBe(true)
    const other = await runPlan(plan, { model, ledger })
    expect(other.tasks.some((t) => t.replayed)).toBe(false)
    expect(model.requests).toHaveLength(4)
  })
})
