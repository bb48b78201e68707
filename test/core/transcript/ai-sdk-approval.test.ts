// AI SDK 6 tool approval, against the real SDK: a run resumes with the user's tool-approval-response as the last
// message, and generateText itself runs the approved call (or adds an execution-denied result) before the model
// sees the prompt. The guards must pass that transcript through unchanged, and what the SDK then sends too.
import { generateText, type ModelMessage, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { MessageValidator } from "../../../src/core/transcript/index.ts"

function setup() {
  const ran: number[] = []
  const tools = {
    pay: tool({
      inputSchema: z.object({ amount: z.number().optional() }),
      needsApproval: true,
      execute: async ({ amount }) => {
        ran.push(amount ?? 0)
        return `paid ${amount}`
      },
    }),
    look: tool({ inputSchema: z.object({}), execute: async () => "seen" }),
  }
  const model = new MockLanguageModelV3({
    doGenerate: async () => ({
      content: [{ type: "text", text: "done" }],
      finishReason: { unified: "stop", raw: "stop" },
      usage: {
        inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 1, text: 1, reasoning: 0 },
      },
      warnings: [],
    }),
  })
  const run = async (messages: unknown[]) => {
    const result = await generateText({ model, tools, messages: messages as ModelMessage[] })
    const prompt = model.doGenerateCalls.at(-1)?.prompt ?? []
    const results = prompt.flatMap((m) =>
      m.role === "tool" ? m.content.filter((p) => p.type === "tool-result") : [],
    )
    return { result, results }
  }
  return { ran, run }
}

const call = (id: string, input: unknown, name = "pay") => ({
  type: "tool-call",
  toolCallId: id,
  toolName: name,
  input,
})
const ask = (approvalId: string, toolCallId: string) => ({
  type: "tool-approval-request",
  approvalId,
  toolCallId,
})
const answer = (approvalId: string, approved: boolean) => ({
  type: "tool-approval-response",
  approvalId,
  approved,
  ...(approved ? {} : { reason: "not now" }),
})

const resume = (approved: boolean): Record<string, unknown>[] => [
  { role: "user", content: "pay 5" },
  { role: "assistant", content: [call("call_1", { amount: 5 }), ask("ap_1", "call_1")] },
  { role: "tool", content: [answer("ap_1", approved)] },
]

describe("AI SDK tool approval", () => {
  for (const approved of [true, false]) {
    it(`a resume with an ${approved ? "approved" : "denied"} call is valid and repair leaves it alone; so is the next turn`, async () => {
      for (const v of [
        new MessageValidator({ format: "ai-sdk" }),
        new MessageValidator({ format: "ai-sdk", allowPendingToolCalls: true }),
      ]) {
        const { ran, run } = setup()
        const messages = resume(approved)
        expect(v.check(messages)).toEqual([])
        const { messages: repaired, report } = v.repair(messages)
        expect(report).toMatchObject({ changed: false, actions: [] })
        const { result, results } = await run(repaired)
        // One result for the call, the SDK's own: the tool's output, or the denial.
        expect(results).toHaveLength(1)
        expect(results[0]?.output).toEqual(
          approved ? { type: "text", value: "paid 5" } : { type: "execution-denied", reason: "not now" },
        )
        expect(ran).toEqual(approved ? [5] : [])
        const next = [...repaired, ...result.response.messages]
        expect(v.check(next)).toEqual([])
        expect(v.repair(next).report).toMatchObject({ changed: false, actions: [] })
      }
    })
  }

  it("another call left without a result is closed in the last message, where the SDK still reads the approval", async () => {
    const { ran, run } = setup()
    const messages = [
      { role: "user", content: "look, then pay 5" },
      {
        role: "assistant",
        content: [call("call_1", { amount: 5 }), call("call_2", {}, "look"), ask("ap_1", "call_1")],
      },
      { role: "tool", content: [answer("ap_1", true)] },
    ]
    const v = new MessageValidator({ format: "ai-sdk" })
    expect(v.check(messages).map((i) => [i.violation, i.toolCallId])).toEqual([
      ["missing_tool_result", "call_2"],
    ])
    const { messages: repaired, report } = v.repair(messages)
    expect(report.actions.map((a) => [a.kind, a.toolCallId])).toEqual([
      ["inserted_interrupted_result", "call_2"],
    ])
    expect(repaired).toHaveLength(3)
    expect(v.check(repaired)).toEqual([])
    const { results } = await run(repaired)
    expect(ran).toEqual([5])
    expect(results.map((r) => r.toolCallId).sort()).toEqual(["call_1", "call_2"])
  })

  it("an approval the SDK will not read (not in the last message) leaves the call unanswered", () => {
    const messages = [...resume(true), { role: "user", content: "well?" }]
    const v = new MessageValidator({ format: "ai-sdk", allowPendingToolCalls: true })
    expect(v.check(messages).map((i) => i.violation)).toEqual(["missing_tool_result"])
    expect(v.repair(messages).report.actions.map((a) => a.kind)).toEqual(["inserted_interrupted_result"])
  })

  it("a call with invalid arguments is closed in the last message, so its approval never runs it with {}", async () => {
    const { ran, run } = setup()
    const messages = [
      { role: "user", content: "pay" },
      { role: "assistant", content: [call("call_1", "five"), ask("ap_1", "call_1")] },
      { role: "tool", content: [answer("ap_1", true)] },
    ]
    const v = new MessageValidator({ format: "ai-sdk" })
    const { messages: repaired, report } = v.repair(messages)
    expect(report.actions.map((a) => a.kind)).toEqual([
      "replaced_invalid_arguments",
      "inserted_invalid_arguments_result",
    ])
    expect(v.check(repaired)).toEqual([])
    const { results } = await run(repaired)
    expect(ran).toEqual([])
    expect(results).toHaveLength(1)
    expect(results[0]?.output).toMatchObject({ type: "error-text" })
  })
})
