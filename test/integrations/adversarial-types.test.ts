// A consumer's strict-TypeScript view of each wrapper: the wrapped tool keeps its framework type, execute keeps the
// schema's parsed input type, and every option type is exported. Checked by tsc (this file is in the project).
import { tool as lcTool } from "@langchain/core/tools"
import { tool as agentsTool, RunContext } from "@openai/agents"
import { tool as aiTool } from "ai"
import { describe, expect, expectTypeOf, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import * as ai from "../../src/integrations/ai-sdk.ts"
import * as lg from "../../src/integrations/langgraph.ts"
import * as oa from "../../src/integrations/openai-agents.ts"

const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

describe("integration types, as a strict consumer sees them", () => {
  it("AI SDK: guardTool returns the tool's own type; its options type is exported", async () => {
    const options: ai.GuardAiToolOptions = { name: "pay", binding, boundary: "manual" }
    const pay = aiTool({
      inputSchema: z.object({ amount: z.number() }),
      execute: async ({ amount }, callOptions) => {
        expectTypeOf(amount).toEqualTypeOf<number>()
        const tx: ai.GuardContext = ai.transitionOf(callOptions)
        return tx.sideEffect(async () => ({ charged: amount }))
      },
    })
    const guarded = ai.guardTool(ledger, pay, options)
    expectTypeOf(guarded).toEqualTypeOf(pay)
    const set = ai.guardTools(ledger, { pay }, { pay: { binding } } satisfies ai.GuardAiToolsOptions)
    expectTypeOf(set.pay).toEqualTypeOf(pay)
    const out = await guarded.execute?.({ amount: 3 }, { toolCallId: "types_1", messages: [] })
    expect(out).toEqual({ charged: 3 })
  })

  it("LangGraph: guardTools keeps the tool type for ToolNode; options and meta are typed", async () => {
    const options: lg.GuardLangGraphToolOptions = {
      binding,
      meta: (config) => ({ threadId: String(config.configurable?.tenant ?? "") }),
    }
    const pay = lcTool(async ({ amount }) => `paid ${amount}`, {
      name: "pay",
      schema: z.object({ amount: z.number() }),
    })
    const [guarded] = lg.guardTools(ledger, [pay], { pay: options })
    expectTypeOf(guarded).toEqualTypeOf<typeof pay | undefined>()
    expect(await guarded?.invoke({ amount: 2 })).toBe("paid 2")
  })

  it("OpenAI Agents: execute typed for the app's own RunContext is accepted; input is the parsed type", async () => {
    interface AppContext {
      readonly tenant: string
    }
    const guard: oa.GuardAgentsToolOptions = { binding, meta: (ctx) => ({ threadId: String(ctx?.context) }) }
    const options = oa.guardToolOptions(
      ledger,
      {
        name: "pay",
        description: "pay",
        parameters: z.object({ amount: z.number() }),
        execute: async ({ amount }, ctx?: RunContext<AppContext>, details?: oa.ToolCallDetails) => {
          expectTypeOf(amount).toEqualTypeOf<number>()
          void details
          return `paid ${amount} for ${ctx?.context.tenant ?? "nobody"}`
        },
      },
      guard,
    )
    const made = agentsTool(options)
    expect(made.name).toBe("pay")
    expectTypeOf(options.execute).parameter(0).toEqualTypeOf<{ amount: number }>()
  })

  it("OpenAI Agents: meta typed for the app's own RunContext is accepted (a conversation id from the context)", async () => {
    interface AppContext {
      readonly conversationId: string
    }
    const seen: string[] = []
    const options = oa.guardToolOptions(
      ledger,
      {
        name: "refund",
        description: "refund",
        parameters: z.object({ orderId: z.string() }),
        execute: async ({ orderId }) => orderId,
      },
      {
        binding,
        meta: (ctx: RunContext<AppContext> | undefined) => {
          seen.push(ctx?.context.conversationId ?? "")
          return { threadId: ctx?.context.conversationId }
        },
      },
    )
    const made = agentsTool(options)
    expect(await made.invoke(new RunContext({ conversationId: "conv_1" }), '{"orderId":"o1"}')).toBe("o1")
    expect(seen).toEqual(["conv_1"])
  })
})
