// What the model reads when the ledger's store is down: the AI SDK and LangGraph's ToolNode send it the thrown
// error's message, and the ledger's outage error quotes the store driver (file paths, hosts, credentials in a URL).
import { AIMessage, type ToolMessage } from "@langchain/core/messages"
import { tool as lcTool } from "@langchain/core/tools"
import { ToolNode } from "@langchain/langgraph/prebuilt"
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import {
  ActionLedger,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { guardTools as guardAiTools } from "../../src/integrations/ai-sdk.ts"
import { guardTools as guardLgTools } from "../../src/integrations/langgraph.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const DRIVER = "ENOTDIR: not a directory, mkdir '/srv/billing/ledger' (redis://billing:hunter2@10.0.0.7:6379)"

/** A store whose every call fails with a driver error naming a path and a host. */
function downLedger(): ActionLedger {
  const storage = new Proxy(new MemoryLedgerStorage(), {
    get: (target, prop, receiver) => {
      const value = Reflect.get(target, prop, receiver)
      return typeof value === "function"
        ? () => {
            throw new Error(DRIVER)
          }
        : value
    },
  }) as LedgerStorage
  return new ActionLedger({ storage, onWarning: () => {} })
}

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

/** The outage as the app catches it: the ledger's class and code, the driver's text kept on its cause. */
function expectOutage(error: unknown): void {
  expect(error).toBeInstanceOf(LedgerStorageUnavailableError)
  const e = error as LedgerStorageUnavailableError
  expect(e.code).toBe("ledger_storage_unavailable")
  expect(e.message).not.toContain("/srv")
  expect((e.cause as Error).message).toContain("/srv/billing/ledger")
}

describe("a ledger outage reaches the model as fixed text, never the store driver's", () => {
  it("AI SDK: the tool error the model reads on its next step", async () => {
    const prompts: string[] = []
    const model = scriptedModel([[{ id: "call_1", tool: "pay", input: { to: "acct_1" } }]], prompts)
    const tools = guardAiTools(
      downLedger(),
      { pay: tool({ inputSchema: z.object({ to: z.string() }), execute: async () => "ch_1" }) },
      { pay: { binding } },
    )
    const result = await generateText({ model, tools, prompt: "pay", stopWhen: stepCountIs(3) })
    const seen = prompts.at(-1) ?? ""
    expect(seen).toContain("Ledger storage unavailable")
    expect(seen).not.toContain("/srv")
    expect(seen).not.toContain("hunter2")
    const failure = result.steps[0]?.content.find((p) => p.type === "tool-error")
    expectOutage(failure?.error)
  })

  it("LangGraph: ToolNode's error message, and the error it rethrows without handleToolErrors", async () => {
    const pay = lcTool(async () => "ch_1", {
      name: "pay",
      description: "pay",
      schema: z.object({ to: z.string() }),
    })
    const tools = guardLgTools(downLedger(), [pay], { pay: { binding } })
    const call = new AIMessage({
      content: "",
      tool_calls: [{ id: "call_1", name: "pay", args: { to: "acct_1" } }],
    })
    const config = { configurable: { thread_id: "t-outage" } }
    const out = (await new ToolNode(tools).invoke({ messages: [call] }, config)) as {
      messages: ToolMessage[]
    }
    const text = String(out.messages[0]?.content)
    expect(text).toContain("Ledger storage unavailable")
    expect(text).not.toContain("/srv")
    const thrown = await new ToolNode(tools, { handleToolErrors: false })
      .invoke({ messages: [call] }, config)
      .then(
        () => null,
        (e: unknown) => e,
      )
    expectOutage(thrown)
  })
  it("OpenAI Agents: the outage fails the run (its errorFunction rethrows it), so the model reads nothing", async () => {
    const pay = agentsTool(
      guardToolOptions(
        downLedger(),
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ to: z.string() }),
          execute: async () => "ch_1",
        },
        { binding },
      ),
    )
    const model = new ScriptedModel([[{ callId: "call_1", name: "pay", args: { to: "acct_1" } }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const failure = await runner
      .run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay")
      .then(
        () => null,
        (e: unknown) => e,
      )
    expect((failure as { error?: unknown } | null)?.error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(model.requests).toHaveLength(1)
  })
})
