// Adversarial review of the AI SDK integration, driven through a real generateText loop (ai's mock model plays
// a hostile model: it chooses the tool-call ids and arguments).
import { generateText, stepCountIs, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"

type Call = { id: string; tool: string; input: Record<string, unknown> }

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

function scriptedModel(steps: Call[][]) {
  let step = 0
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const calls = steps[step++]
      if (!calls) {
        return {
          content: [{ type: "text" as const, text: "done" }],
          finishReason: { unified: "stop" as const, raw: "stop" },
          usage,
          warnings: [],
        }
      }
      return {
        content: calls.map((c) => ({
          type: "tool-call" as const,
          toolCallId: c.id,
          toolName: c.tool,
          input: JSON.stringify(c.input),
        })),
        finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
        usage,
        warnings: [],
      }
    },
  })
}

function toolOutputs(result: { steps: Array<{ content: Array<{ type: string }> }> }) {
  return result.steps.flatMap((s) =>
    s.content.filter((p) => p.type === "tool-result" || p.type === "tool-error"),
  ) as Array<{ type: string; toolCallId: string; output?: unknown; error?: unknown }>
}

const newLedger = (storage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} })

const billing = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

describe("AI SDK integration, adversarial", () => {
  it("a schema transform runs once: the tool gets the amount the framework parsed, not a twice-transformed one", async () => {
    const charged: number[] = []
    const ledger = newLedger()
    const charge = guardTool(
      ledger,
      tool({
        // dollars in, cents out: not idempotent, so running the schema a second time multiplies again.
        inputSchema: z.object({ dollars: z.number().transform((d) => Math.round(d * 100)) }),
        execute: async ({ dollars }) => {
          charged.push(dollars)
          return { cents: dollars }
        },
      }),
      { name: "charge", binding: billing },
    )
    const call = { id: "call_cents", tool: "charge", input: { dollars: 5 } }
    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { charge },
      prompt: "charge 5 dollars",
      stopWhen: stepCountIs(4),
    })
    expect(toolOutputs(result).map((o) => o.output)).toEqual([{ cents: 500 }, { cents: 500 }])
    expect(charged).toEqual([500])
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.kwargs.dollars)).toEqual([500])
  })
})
