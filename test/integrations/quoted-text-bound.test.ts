// What a guard's own error quotes of the model's or the body's text is clipped: the held retry's hard block quotes
// the earlier call's tool-call id, which the model wrote (a 200 KB id came back whole in every turn), and LangGraph's
// interrupt_inside_side_effect error quotes the external operation ref the body recorded. docs/integrations.md: "An
// id over 300 characters is quoted as its first 300 and `...`".
import { tool as lcTool } from "@langchain/core/tools"
import { interrupt, MemorySaver } from "@langchain/langgraph"
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTools } from "../../src/integrations/ai-sdk.ts"
import { guardTools as guardLcTools, transitionOf } from "../../src/integrations/langgraph.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const billing = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const huge = `call_${"x".repeat(200_000)}`

describe("text a guard quotes to the model is bounded", () => {
  it("AI SDK: a held retry's hard block does not quote the earlier call's 200 KB tool-call id whole", async () => {
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      pollInterval: 0.005,
      onWarning: () => {},
    })
    let runs = 0
    const tools = guardTools(
      ledger,
      {
        pay: tool({
          inputSchema: z.object({ to: z.string() }),
          execute: async (): Promise<{ paid: boolean }> => {
            runs++
            throw new Error("gateway timeout")
          },
        }),
      },
      { pay: { binding: billing } },
    )
    const result = await generateText({
      model: scriptedModel([
        [{ id: huge, tool: "pay", input: { to: "bob" } }],
        [{ id: "call_retry", tool: "pay", input: { to: "bob" } }],
      ]),
      tools,
      prompt: "pay bob",
      experimental_context: {},
      stopWhen: stepCountIs(3),
    })
    const errors = result.steps.flatMap((s) => s.content.filter((p) => p.type === "tool-error")) as Array<{
      toolCallId: string
      error: Error & { code?: string }
    }>
    const retry = errors.find((e) => e.toolCallId === "call_retry")
    expect(runs).toBe(1)
    expect(retry?.error.code).toBe("ledger_hard_block")
    expect(retry?.error.message).toContain(`(tool call ${huge.slice(0, 300)}...)`)
    expect(retry?.error.message.length).toBeLessThan(2_000)
  })

  it("LangGraph: the same hold in a thread quotes the earlier call's id clipped", async () => {
    const ledger = newLedger()
    let runs = 0
    const pay = lcTool(
      async () => {
        runs++
        throw new Error("gateway timeout")
      },
      { name: "pay", description: "pay", schema: z.object({ to: z.string() }) },
    )
    // Two requests on one thread (one checkpointer): the model's retry under a new id comes in the second.
    const checkpointer = new MemorySaver()
    const request = (id: string) =>
      scriptedGraph(
        guardLcTools(ledger, [pay], { pay: { binding: billing } }),
        [{ id, name: "pay", args: { to: "bob" } }],
        checkpointer,
      ).invoke({ messages: [{ role: "user", content: "pay" }] }, { configurable: { thread_id: "t" } })
    await request(huge)
    const out = await request("call_retry")
    const told = String(toolMessages(out).at(-1)?.content)
    expect(runs).toBe(1)
    expect(told).toContain("Do not call it again")
    expect(told.length).toBeLessThan(2_000)
  })

  it("LangGraph: interrupt() after a 200 KB external operation ref quotes the ref clipped", async () => {
    const ledger = newLedger()
    const pay = lcTool(
      async ({ to }, config) => {
        const tx = transitionOf(config)
        await tx.recordExternalOperation(huge)
        return `paid ${to}: ${String(interrupt({ question: "note?" }))}`
      },
      { name: "pay", description: "pay", schema: z.object({ to: z.string() }) },
    )
    const graph = scriptedGraph(
      guardLcTools(ledger, [pay], { pay: { binding: billing, boundary: "manual" } }),
      [{ id: "call_1", name: "pay", args: { to: "bob" } }],
    )
    const out = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t" } },
    )
    const told = String(toolMessages(out)[0]?.content)
    expect(told).toContain(`after recording external operation '${huge.slice(0, 300)}...'`)
    expect(told.length).toBeLessThan(2_000)
  })
})
