// A scripted AI SDK model: each step answers with the given tool calls, or with text when the script is done.
import { MockLanguageModelV3 } from "ai/test"

export type Call = { id: string; tool: string; input: Record<string, unknown> }

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

/** `prompts`, when given, receives each step's prompt as JSON text: what the model read. */
export function scriptedModel(steps: Call[][], prompts?: string[]): MockLanguageModelV3 {
  let step = 0
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts?.push(JSON.stringify(options.prompt))
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
