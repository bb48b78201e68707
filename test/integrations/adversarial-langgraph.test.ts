// Adversarial review of the LangGraph integration in a real StateGraph (agent → ToolNode, MemorySaver).
import { tool } from "@langchain/core/tools"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { guardTools } from "../../src/integrations/langgraph.ts"
import { checkpointBeforeTools, newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const payment = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }

function payTool(counter: { n: number }) {
  return tool(
    async ({ to }) => {
      counter.n++
      return `paid ${to} #${counter.n}`
    },
    { name: "pay", description: "pay", schema: z.object({ to: z.string() }) },
  )
}

describe("LangGraph integration, adversarial", () => {
  it("a tool call replayed from its checkpoint by a new run (another run_id) runs once", async () => {
    const counter = { n: 0 }
    const ledger = newLedger()
    const calls = [{ id: "call_pay", name: "pay", args: { to: "acct_1" } }]
    const graph = scriptedGraph(guardTools(ledger, [payTool(counter)], { pay: { binding: payment } }), calls)
    const first = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t-run", run_id: "run-1" } },
    )
    expect(toolMessages(first).map((m) => m.content)).toEqual(["paid acct_1 #1"])
    // LangGraph Platform starts every run on a thread with a new run_id (configurable and metadata).
    const checkpointId = await checkpointBeforeTools(graph, "t-run")
    const replay = await graph.invoke(null, {
      configurable: { thread_id: "t-run", checkpoint_id: checkpointId, run_id: "run-2" },
      metadata: { run_id: "run-2" },
    })
    expect(counter.n).toBe(1)
    expect(toolMessages(replay).map((m) => m.content)).toEqual(["paid acct_1 #1"])
  })

  it("one AIMessage carrying the same tool-call id twice: ToolNode runs both in parallel, the body runs once", async () => {
    const counter = { n: 0 }
    const ledger = newLedger()
    const slow = tool(
      async ({ to }) => {
        counter.n++
        await new Promise((r) => setTimeout(r, 30))
        return `paid ${to}`
      },
      { name: "pay", description: "pay", schema: z.object({ to: z.string() }) },
    )
    const call = { id: "call_dup", name: "pay", args: { to: "acct_2" } }
    const graph = scriptedGraph(guardTools(ledger, [slow], { pay: { binding: payment } }), [call, call, call])
    const out = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t-dup" } },
    )
    expect(counter.n).toBe(1)
    expect(toolMessages(out).map((m) => m.content)).toEqual(["paid acct_2", "paid acct_2", "paid acct_2"])
  })

  it("the hashed arguments are the tool's own: no config, runtime or tool-call fields reach the fingerprint", async () => {
    const ledger = newLedger()
    const calls = [{ id: "call_args", name: "pay", args: { to: "acct_4", injected: "x" } }]
    const graph = scriptedGraph(guardTools(ledger, [payTool({ n: 0 })], { pay: { binding: payment } }), calls)
    await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t-args" } },
    )
    const [row] = await ledger.listTransitions()
    const own = Object.keys(row?.kwargs ?? {}).filter(
      (k) => !["tool_call_id", "thread_id", "node", "run_id"].includes(k),
    )
    expect(own).toEqual(["to"])
  })

  it("a schema transform runs once: the tool gets the amount LangChain parsed", async () => {
    const charged: number[] = []
    const ledger = newLedger()
    const pay = tool(
      async ({ dollars }) => {
        charged.push(dollars)
        return `charged ${dollars} cents`
      },
      {
        name: "pay",
        description: "pay",
        schema: z.object({ dollars: z.number().transform((d) => Math.round(d * 100)) }),
      },
    )
    const calls = [{ id: "call_cents", name: "pay", args: { dollars: 5 } }]
    const graph = scriptedGraph(guardTools(ledger, [pay], { pay: { binding: payment } }), calls)
    const out = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t-cents" } },
    )
    expect(toolMessages(out).map((m) => m.content)).toEqual(["charged 500 cents"])
    expect(charged).toEqual([500])
  })
})
