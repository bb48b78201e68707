// Adversarial review of the held retry in a real LangGraph StateGraph: a server that compiles its graph and guards
// its tools per request (one ledger, one checkpointer) must hold the next request's retry in the same thread.
import { tool } from "@langchain/core/tools"
import { MemorySaver } from "@langchain/langgraph"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { guardTools } from "../../src/integrations/langgraph.ts"
import { newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }

describe("LangGraph held retry: tools guarded per request", () => {
  it("the next request's retry in the thread is refused; another thread's payment runs", async () => {
    const ledger = newLedger()
    const checkpointer = new MemorySaver()
    const charges: string[] = []
    let failures = 1
    const pay = tool(
      async ({ to, cents }) => {
        charges.push(`${to}:${cents}`)
        if (failures-- > 0) throw new Error("gateway timed out")
        return `paid ${cents} to ${to}`
      },
      { name: "pay", description: "pay", schema: z.object({ to: z.string(), cents: z.number() }) },
    )
    // One HTTP request: a fresh guarded tool and graph over the process's ledger and checkpointer.
    const request = (thread: string, id: string) =>
      scriptedGraph(
        guardTools(ledger, [pay], { pay: { binding } }),
        [{ id, name: "pay", args: { to: "acct_1", cents: 500 } }],
        checkpointer,
      ).invoke({ messages: [{ role: "user", content: "pay" }] }, { configurable: { thread_id: thread } })
    await request("t-1", "call_1")
    const second = await request("t-1", "call_2")
    expect(charges).toEqual(["acct_1:500"])
    expect(String(toolMessages(second).at(-1)?.content)).toMatch(/tool call call_1.*Do not call it again/)
    await request("t-2", "call_3")
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
  })
})
