// The AI SDK adapter against the real provider-spec types: a LanguageModelV3 and a LanguageModelV2, typed by
// `@ai-sdk/provider` itself, drive a plan through `fromAiSdk`.
import type {
  LanguageModelV2,
  LanguageModelV2CallOptions,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
} from "@ai-sdk/provider"
import { describe, expect, it } from "vitest"
import { type AiSdkCallOptions, fromAiSdk, runPlan } from "../../../src/core/harness/index.ts"
import { failed, task } from "./helpers.ts"

const usageV3 = (input: number | undefined, output: number | undefined) => ({
  inputTokens: {
    total: input,
    noCache: undefined,
    cacheRead: input === undefined ? undefined : 1,
    cacheWrite: undefined,
  },
  outputTokens: { total: output, text: output, reasoning: undefined },
})

function v3(replies: Array<(o: LanguageModelV3CallOptions) => LanguageModelV3GenerateResult>) {
  const calls: LanguageModelV3CallOptions[] = []
  const model: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: "acme.chat",
    modelId: "acme-large",
    supportedUrls: {},
    async doGenerate(options) {
      calls.push(options)
      const reply = replies[calls.length - 1]
      if (!reply) throw new Error("no more replies")
      return reply(options)
    },
    doStream: () => Promise.reject(new Error("not used")),
  }
  return { model, calls }
}

describe("fromAiSdk", () => {
  it("runs a tool loop on a LanguageModelV3: prompt, tools, signal, usage and attribution", async () => {
    const { model, calls } = v3([
      () => ({
        content: [
          { type: "reasoning", text: "thinking..." },
          { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"q":"x"}' },
          { type: "tool-call", toolCallId: "c2", toolName: "lookup", input: '{"q":"y"}' },
        ],
        finishReason: { unified: "tool-calls", raw: "tool_use" },
        usage: usageV3(12, 4),
        warnings: [],
      }),
      () => ({
        content: [{ type: "text", text: "found x and y" }],
        finishReason: { unified: "stop", raw: "end_turn" },
        usage: usageV3(undefined, 3),
        response: { modelId: "acme-large-2026" },
        warnings: [],
      }),
    ])
    const result = await runPlan(
      { tasks: [task("t", [], "find things")], output_task_id: "t" },
      {
        model: fromAiSdk(model),
        instructions: "be brief",
        settings: { temperature: 0.2, max_tokens: 100 },
        tools: [
          {
            name: "lookup",
            description: "looks up",
            parameters: { type: "object", properties: { q: { type: "string" } } },
            execute: (args) =>
              args.q === "y"
                ? Promise.reject(Object.assign(new Error("x"), { llmMessage: "no y" }))
                : `value of ${args.q}`,
          },
        ],
      },
    )
    expect(result.output).toBe("found x and y")
    expect(calls[0]?.prompt).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "find things" }] },
    ])
    expect(calls[0]?.tools).toEqual([
      {
        type: "function",
        name: "lookup",
        description: "looks up",
        inputSchema: { type: "object", properties: { q: { type: "string" } } },
      },
    ])
    expect(calls[0]?.temperature).toBe(0.2)
    expect(calls[0]?.maxOutputTokens).toBe(100)
    expect(calls[0]?.abortSignal).toBeInstanceOf(AbortSignal)
    expect(calls[1]?.prompt.slice(2)).toEqual([
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: { q: "x" } },
          { type: "tool-call", toolCallId: "c2", toolName: "lookup", input: { q: "y" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "c1",
            toolName: "lookup",
            output: { type: "text", value: "value of x" },
          },
          {
            type: "tool-result",
            toolCallId: "c2",
            toolName: "lookup",
            output: { type: "error-text", value: "no y" },
          },
        ],
      },
    ])
    expect(result.model_requests[0]).toMatchObject({
      model_name: "acme-large",
      provider_name: "acme.chat",
      input_tokens: 12,
      output_tokens: 4,
      cache_read_tokens: 1,
      finish_reason: "tool-calls",
    })
    expect(result.model_requests[1]).toMatchObject({
      model_name: "acme-large-2026",
      input_tokens: null,
      output_tokens: 3,
    })
    expect(result.usage).toMatchObject({ requests: 2, input_tokens: 12, output_tokens: 7, tool_calls: 2 })
  })

  it("accepts a LanguageModelV2 (flat usage, string finish reason)", async () => {
    const seen: LanguageModelV2CallOptions[] = []
    const model: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "old.chat",
      modelId: "old-1",
      supportedUrls: {},
      async doGenerate(options) {
        seen.push(options)
        return {
          content: [{ type: "text", text: "v2 says hi" }],
          finishReason: "stop",
          usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7, cachedInputTokens: 3 },
          warnings: [],
        }
      },
      doStream: () => Promise.reject(new Error("not used")),
    }
    const r = await runPlan({ tasks: [task("t")], output_task_id: "t" }, { model: fromAiSdk(model) })
    expect(r.output).toBe("v2 says hi")
    expect(seen[0]?.tools).toBeUndefined()
    expect(r.model_requests[0]).toMatchObject({
      input_tokens: 5,
      output_tokens: 2,
      cache_read_tokens: 3,
      finish_reason: "stop",
      provider_name: "old.chat",
    })
  })

  it("malformed tool arguments fail the task; a non-model is refused up front", async () => {
    const { model } = v3([
      () => ({
        content: [{ type: "tool-call", toolCallId: "c", toolName: "t", input: "{not json" }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage: usageV3(1, 1),
        warnings: [],
      }),
    ])
    const err = await failed(
      runPlan({ tasks: [task("t")], output_task_id: "t" }, { model: fromAiSdk(model) }),
    )
    expect(err.result.failure).toMatchObject({
      reason: "task_failed",
      error_type: "InvalidModelResponseError",
    })
    expect(err.result.usage.requests).toBe(1)
    let thrown: unknown
    try {
      fromAiSdk({} as never)
    } catch (e) {
      thrown = e
    }
    expect((thrown as { code?: string }).code).toBe("invalid_option")
    expect(String((thrown as Error).message)).toContain("specificationVersion")
  })
})

describe("fromAiSdk against a malformed or hostile provider answer", () => {
  const call = (over: Record<string, unknown>) => ({
    type: "tool-call",
    toolCallId: "c",
    toolName: "t",
    input: "{}",
    ...over,
  })
  // Each used to be a TypeError (null, a content object or number), or to run on: a content string read as no parts
  // (an empty answer), a missing id or name coerced to "undefined", a text that was not a string dropped.
  const bad: Array<[string, unknown]> = [
    ["a null result", null],
    ["content that is an object", { content: { type: "text", text: "hi" } }],
    ["content that is a number", { content: 5 }],
    ["content that is a string", { content: "the answer" }],
    ["a tool call without an id", { content: [call({ toolCallId: undefined })] }],
    ["a tool call with a number id", { content: [call({ toolCallId: 7 })] }],
    ["a tool call without a name", { content: [call({ toolName: undefined })] }],
    ["a text that is not a string", { content: [{ type: "text", text: { toString: () => "hi" } }] }],
    ["arguments that are not JSON", { content: [call({ input: "{'n': 1}" })] }],
    ["arguments that are JSON null", { content: [call({ input: "null" })] }],
  ]
  for (const [name, answer] of bad)
    it(`${name}: InvalidModelResponseError, and no tool runs`, async () => {
      const model = {
        specificationVersion: "v3" as const,
        provider: "acme.chat",
        modelId: "acme-large",
        doGenerate: async () => answer as never,
      }
      let ran = 0
      const err = await failed(
        runPlan(
          { tasks: [task("t")], output_task_id: "t" },
          {
            model: fromAiSdk(model),
            tools: [{ name: "t", parameters: { type: "object" }, execute: async () => `ran ${++ran}` }],
          },
        ),
      )
      expect(err.result.failure).toMatchObject({
        reason: "task_failed",
        error_type: "InvalidModelResponseError",
      })
      expect(ran).toBe(0)
      expect(err.result.usage.requests).toBe(1)
    })

  it("blank or repeated tool call ids, as some OpenAI-compatible endpoints send, get ids of their own", async () => {
    // Gemini's OpenAI-compatible endpoint has answered parallel calls with "" ids, or one id for all of them, and the
    // AI SDK passes either on. Since the harness refused a repeated id, every such parallel answer failed its task.
    const prompts: AiSdkCallOptions["prompt"][] = []
    const model = {
      specificationVersion: "v3" as const,
      provider: "acme.chat",
      modelId: "acme-large",
      doGenerate: async (o: AiSdkCallOptions) => {
        prompts.push(o.prompt)
        if (prompts.length > 1) return { content: [{ type: "text", text: "done" }] } as never
        return {
          content: [
            call({ toolCallId: "", input: '{"n":1}' }),
            call({ toolCallId: "", input: '{"n":2}' }),
            call({ toolCallId: "x", input: '{"n":3}' }),
            call({ toolCallId: "x", input: '{"n":4}' }),
            call({ toolCallId: "x_3", input: '{"n":5}' }),
          ],
        } as never
      },
    }
    const ran: unknown[] = []
    const r = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      {
        model: fromAiSdk(model),
        tools: [{ name: "t", parameters: { type: "object" }, execute: async (a) => `ran ${ran.push(a.n)}` }],
      },
    )
    expect(r.output).toBe("done")
    expect(ran).toEqual([1, 2, 3, 4, 5])
    // The ids each call and its result went back to the provider under.
    const idsOf = (role: "assistant" | "tool") =>
      prompts[1]!.flatMap((m) =>
        m.role === role ? (m.content as Array<{ toolCallId?: string }>).map((p) => p.toolCallId) : [],
      )
    const callIds = idsOf("assistant")
    const resultIds = idsOf("tool")
    expect(new Set(callIds).size).toBe(5)
    expect(callIds).toEqual(["_0", "_1", "x", "x_3", "x_3_4"])
    expect(resultIds).toEqual(callIds)
  })

  it("a huge tool name is cut to 40 characters in the failure message", async () => {
    const model = {
      specificationVersion: "v3" as const,
      provider: "acme.chat",
      modelId: "acme-large",
      doGenerate: async () =>
        ({ content: [call({ toolName: "n".repeat(1_000_000), input: "{bad" })] }) as never,
    }
    const err = await failed(
      runPlan({ tasks: [task("t")], output_task_id: "t" }, { model: fromAiSdk(model) }),
    )
    expect(err.result.failure?.error_type).toBe("InvalidModelResponseError")
    // Before: the whole 1 MB name, in the failure and in the task_failed event.
    expect(err.result.failure?.message).toBe(
      `the model sent invalid JSON arguments for tool '${"n".repeat(40)}'`,
    )
  })

  it("a model id or finish reason that is not a string does not reach the samples", async () => {
    const model = {
      specificationVersion: "v3" as const,
      provider: "acme.chat",
      modelId: "acme-large",
      doGenerate: async () =>
        ({
          content: [{ type: "text", text: "ok" }],
          finishReason: { unified: 5, raw: undefined },
          usage: { inputTokens: { total: -5 }, outputTokens: { total: Number.NaN } },
          response: { modelId: { evil: true } },
        }) as never,
    }
    const r = await runPlan({ tasks: [task("t")], output_task_id: "t" }, { model: fromAiSdk(model) })
    expect(r.output).toBe("ok")
    // Before: model_name { evil: true } and finish_reason 5.
    expect(r.model_requests[0]).toMatchObject({
      model_name: "acme-large",
      input_tokens: null,
      output_tokens: null,
    })
    expect(r.model_requests[0]).not.toHaveProperty("finish_reason")
  })
})
