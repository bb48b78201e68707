// What the model reads when the guard refuses its arguments (bounds: an entity or path scope, the caller's schema).
// The frameworks send the model the thrown error's `message`; a ToolBoundaryError's is a code for logs ("pay:
// scope_entity_pattern on to"), its `llmMessage` says what was expected, so the model can correct the call.
import { AIMessage, type ToolMessage } from "@langchain/core/messages"
import { tool as lcTool } from "@langchain/core/tools"
import { ToolNode } from "@langchain/langgraph/prebuilt"
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { ToolBoundaryError } from "../../src/core/tools/index.ts"
import { guardTools as guardAiTools } from "../../src/integrations/ai-sdk.ts"
import { guardTools as guardLgTools } from "../../src/integrations/langgraph.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const bounds = { entityParam: "to", entityPattern: "acct_[0-9]+" }
const newLedger = () =>
  new ActionLedger({ storage: new MemoryLedgerStorage(), pollInterval: 0.005, onWarning: () => {} })

/** The refusal as the model reads it: what was wrong and what is expected, no stack. */
function expectUseful(text: string): void {
  expect(text).toContain("Tool 'pay' failed scope validation. Field: to.")
  expect(text).toContain("Expected: pattern 'acct_[0-9]+'")
  expect(text).not.toMatch(/\n\s+at /)
}

describe("a refused call reaches the model with what the guard expected", () => {
  it("AI SDK: the tool error of the next step's prompt; the app still gets the ToolBoundaryError", async () => {
    let paid = 0
    const prompts: string[] = []
    const model = scriptedModel([[{ id: "call_1", tool: "pay", input: { to: "bob" } }]], prompts)
    const tools = guardAiTools(
      newLedger(),
      {
        pay: tool({
          inputSchema: z.object({ to: z.string() }),
          execute: async () => `ch_${++paid}`,
        }),
      },
      { pay: { binding, bounds } },
    )
    const result = await generateText({ model, tools, prompt: "pay", stopWhen: stepCountIs(3) })
    expectUseful(JSON.parse(prompts.at(-1) ?? "[]").at(-1).content[0].output.value)
    const error = result.steps[0]?.content.find((p) => p.type === "tool-error")?.error
    expect(error).toBeInstanceOf(ToolBoundaryError)
    expect((error as ToolBoundaryError).violation).toBe("scope_entity_pattern")
    expect(paid).toBe(0)
  })

  it("LangGraph: ToolNode's error message", async () => {
    let paid = 0
    const pay = lcTool(async () => `ch_${++paid}`, {
      name: "pay",
      description: "pay",
      schema: z.object({ to: z.string() }),
    })
    const tools = guardLgTools(newLedger(), [pay], { pay: { binding, bounds } })
    const call = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_1", name: "pay", args: { to: "bob" } }],
    })
    const out = (await new ToolNode(tools).invoke(
      { messages: [call] },
      { configurable: { thread_id: "t-refused" } },
    )) as { messages: ToolMessage[] }
    expectUseful(String(out.messages[0]?.content))
    expect(paid).toBe(0)
  })

  it("OpenAI Agents: the text its errorFunction gives the model", async () => {
    let paid = 0
    const pay = agentsTool(
      guardToolOptions(
        newLedger(),
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ to: z.string() }),
          execute: async () => `ch_${++paid}`,
        },
        { binding, bounds },
      ),
    )
    const model = new ScriptedModel([[{ callId: "call_1", name: "pay", args: { to: "bob" } }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    await runner.run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay")
    expectUseful(JSON.stringify(model.requests.at(-1)?.input))
    expect(paid).toBe(0)
  })

  it("an invalid result stays a code: the model is never shown the result that failed outputSchema", async () => {
    const prompts: string[] = []
    const model = scriptedModel([[{ id: "call_1", tool: "lookup", input: { id: "u1" } }]], prompts)
    const tools = guardAiTools(
      newLedger(),
      {
        lookup: tool({
          inputSchema: z.object({ id: z.string() }),
          execute: async ({ id }) => ({ id, api_key: "sk-live-123" }),
        }),
      },
      { lookup: { binding, bounds: { outputSchema: z.object({ id: z.string() }).strict() } } },
    )
    await generateText({ model, tools, prompt: "look", stopWhen: stepCountIs(3) })
    expect(prompts.at(-1)).toContain("lookup: output_validation_failed")
    expect(prompts.at(-1)).not.toContain("sk-live-123")
  })
})
