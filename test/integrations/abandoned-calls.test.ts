// A framework that gives up on a tool call (OpenAI Agents' `timeoutMs`, an aborted AI SDK or LangGraph run) tells
// the model the call failed while its body still runs. The model calls again under a new call id: a new ledger key.
// The payment must run once: the retry waits for the call still running and gets its result.
import { tool as lcTool } from "@langchain/core/tools"
import { tool as agentsTool } from "@openai/agents"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool as guardLangGraphTool } from "../../src/integrations/langgraph.ts"
import { guardToolOptions, transitionOf } from "../../src/integrations/openai-agents.ts"
import { ScriptedModel } from "./scripted/openai-agents.ts"
import {
  agentsPay,
  aiSdkPayer,
  args,
  binding,
  PausingModel,
  payTurns,
  runPayer,
  sleep,
  slowGateway,
} from "./scripted/payments.ts"

const newLedger = () => new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })

describe("OpenAI Agents `timeoutMs`: the retry of a call the SDK timed out while it still ran", () => {
  it("a retry that comes while the first call still runs waits for it and answers its result: one charge", async () => {
    // Timed out at 200 ms of 300, the retry's own 200 ms outlast the first call: 100 ms of slack either way.
    const { charges, charge } = slowGateway(300)
    const outputs = await runPayer(new ScriptedModel(payTurns(2)), agentsPay(newLedger(), charge, 200))
    expect(charges).toEqual(["acct_1:500"])
    expect(outputs).toHaveLength(2)
    expect(outputs[0]).toContain("timed out after 200ms")
    expect(outputs[1]).toContain("paid 500 to acct_1")
  })

  it("a retry that times out while it waits runs nothing; a later retry answers the first call's result", async () => {
    const { charges, charge } = slowGateway(150)
    const model = new PausingModel(payTurns(3), { 2: 250 })
    const outputs = await runPayer(model, agentsPay(newLedger(), charge, 30))
    expect(charges).toEqual(["acct_1:500"])
    expect(outputs.slice(0, 2).map((o) => o.includes("timed out after 30ms"))).toEqual([true, true])
    expect(outputs[2]).toContain("paid 500 to acct_1")
  })

  it("the first call failing after its charge: the waiting retry is hard-blocked, nothing runs twice", async () => {
    const { charges, charge } = slowGateway(200, (n) => (n === 1 ? "after" : null))
    const ledger = newLedger()
    // The second call times out while it waits; the model calls a third time once the first has failed.
    const outputs = await runPayer(new PausingModel(payTurns(3), { 2: 300 }), agentsPay(ledger, charge, 40))
    expect(charges).toEqual(["acct_1:500"])
    expect(outputs.slice(0, 2).map((o) => o.includes("timed out after 40ms"))).toEqual([true, true])
    expect(outputs[2]).toContain("Do not call the tool again")
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.terminalOutcome)).toEqual(["UNKNOWN"])
  })

  it("the first call refused before any charge (manual boundary): the waiting retry runs it once", async () => {
    const ledger = newLedger()
    let charged = 0
    let attempts = 0
    const pay = agentsTool({
      ...guardToolOptions(
        ledger,
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ to: z.string(), cents: z.number() }),
          execute: async (_a, _ctx, details) => {
            const first = ++attempts === 1
            await sleep(first ? 200 : 0)
            if (first) throw new Error("the card is locked: nothing was charged")
            return transitionOf(details).sideEffect(async () => `paid, charge #${++charged}`)
          },
        },
        { binding, boundary: "manual" },
      ),
      timeoutMs: 40,
    })
    const outputs = await runPayer(new PausingModel(payTurns(3), { 2: 300 }), pay)
    expect(charged).toBe(1)
    expect(attempts).toBe(2)
    expect(outputs.slice(0, 2).map((o) => o.includes("timed out after 40ms"))).toEqual([true, true])
    expect(outputs[2]).toContain("paid, charge #1")
  })

  it("two identical calls in one step, nothing timed out: two intents, two charges (unchanged)", async () => {
    const { charges, charge } = slowGateway(10)
    const both = [
      [
        { callId: "fc_a", name: "pay", args },
        { callId: "fc_b", name: "pay", args },
      ],
    ]
    const outputs = await runPayer(new ScriptedModel(both), agentsPay(newLedger(), charge, 1000))
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
    expect(outputs).toHaveLength(2)
  })
})

describe("AI SDK: a run aborted while a payment runs, then retried in the same thread", () => {
  it("the retry under a new call id answers the aborted call's result: one charge", async () => {
    const { charges, charge } = slowGateway(200)
    const attempt = aiSdkPayer(newLedger(), charge)
    const aborted = await attempt("call_a", AbortSignal.timeout(30)).then(
      () => "finished",
      (e: unknown) => (e as Error).name,
    )
    expect(aborted).not.toBe("finished")
    const retry = await attempt("call_b")
    const results = retry.steps.flatMap((s) => s.content.filter((p) => p.type === "tool-result"))
    expect(results.map((r) => (r as { output: unknown }).output)).toEqual(["paid 500 to acct_1"])
    expect(charges).toEqual(["acct_1:500"])
  })
})

describe("LangGraph: a graph run aborted while a payment runs, then a new tool call in the same thread", () => {
  // LangChain's tool races its function with the signal: the aborted call fails at once, with its effect unknown,
  // while the function runs on. The new call cannot wait for it: it is hard-blocked, and the charge happens once.
  it("the new call is hard-blocked while the aborted one may still charge: one charge", async () => {
    let charged = 0
    const pay = guardLangGraphTool(
      newLedger(),
      lcTool(
        async ({ cents }: { to: string; cents: number }) => {
          await sleep(200)
          charged++
          return `paid ${cents}`
        },
        { name: "pay", schema: z.object({ to: z.string(), cents: z.number() }) },
      ),
      { binding },
    )
    const call = (id: string, signal?: AbortSignal) =>
      pay.invoke(
        { type: "tool_call", id, name: "pay", args },
        { configurable: { thread_id: "t-1" }, ...(signal ? { signal } : {}) },
      )
    const first = await call("call_a", AbortSignal.timeout(30)).then(
      () => "finished",
      (e: unknown) => (e as Error).name,
    )
    expect(first).not.toBe("finished")
    const second = await call("call_b").then(
      () => "ran",
      (e: unknown) => (e as { code?: string }).code,
    )
    expect(second).toBe("ledger_hard_block")
    await sleep(250)
    expect(charged).toBe(1)
  })
})
