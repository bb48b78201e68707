// Adversarial review of the AI SDK integration, driven through a real generateText loop (ai's mock model plays
// a hostile model: it chooses the tool-call ids and arguments).
import { generateText, stepCountIs, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, LedgerIdentityConflictError, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool, guardTools } from "../../src/integrations/ai-sdk.ts"

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

  it("one tool-call id reused for another unbound tool is an identity conflict, never the other tool's result", async () => {
    const ledger = newLedger()
    let deletes = 0
    const tools = guardTools(ledger, {
      lookup: tool({
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }) => ({ secret: `record ${id}` }),
      }),
      remove: tool({
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }) => {
          deletes++
          return { deleted: id }
        },
      }),
    })
    const result = await generateText({
      model: scriptedModel([
        [{ id: "call_0", tool: "lookup", input: { id: "42" } }],
        [{ id: "call_0", tool: "remove", input: { id: "42" } }],
      ]),
      tools,
      prompt: "x",
      stopWhen: stepCountIs(4),
    })
    const [first, second] = toolOutputs(result)
    expect(first?.output).toEqual({ secret: "record 42" })
    expect(second?.type).toBe("tool-error")
    expect(second?.output).toBeUndefined()
    expect(second?.error).toBeInstanceOf(LedgerIdentityConflictError)
    expect(deletes).toBe(0)
  })

  it("one tool-call id in another thread does not replay that thread's stored result (unbound tool)", async () => {
    const storage = new MemoryLedgerStorage()
    const runs: string[] = []
    const forThread = (threadId: string) =>
      guardTools(
        newLedger(storage),
        {
          read_inbox: tool({
            inputSchema: z.object({}),
            execute: async (_input, options) => {
              const owner = String(options.experimental_context)
              runs.push(owner)
              return { inbox: `mail of ${owner}` }
            },
          }),
        },
        { read_inbox: { meta: () => ({ threadId }) } },
      )
    const call = { id: "call_1", tool: "read_inbox", input: {} }
    const alice = await generateText({
      model: scriptedModel([[call]]),
      tools: forThread("alice"),
      prompt: "x",
      experimental_context: "alice",
    })
    expect(toolOutputs(alice)[0]?.output).toEqual({ inbox: "mail of alice" })
    const bob = await generateText({
      model: scriptedModel([[call]]),
      tools: forThread("bob"),
      prompt: "x",
      experimental_context: "bob",
    })
    const out = toolOutputs(bob)[0]
    expect(out?.type).toBe("tool-error")
    expect(out?.error).toBeInstanceOf(LedgerIdentityConflictError)
    expect(JSON.stringify(out)).not.toContain("mail of alice")
    expect(String(out?.error)).not.toContain("mail of alice")
    expect(runs).toEqual(["alice"])
  })
})
