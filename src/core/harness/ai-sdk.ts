// An adapter from a Vercel AI SDK language model (specification v2 or v3, the object every `@ai-sdk/*` provider
// returns) to the harness's ModelClient. It is typed structurally, so neither `ai` nor `@ai-sdk/provider` is
// imported: the harness stays dependency-free and any provider package works.
import { InvalidOptionError } from "../errors.ts"
import { InvalidModelResponseError } from "./agent.ts"
import type {
  Message,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ResponsePart,
  ResponseUsage,
} from "./model.ts"

type AiSdkPromptMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: Array<{ type: "text"; text: string }> }
  | {
      role: "assistant"
      content: Array<
        | { type: "text"; text: string }
        | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown }
      >
    }
  | {
      role: "tool"
      content: Array<{
        type: "tool-result"
        toolCallId: string
        toolName: string
        output: { type: "text"; value: string } | { type: "error-text"; value: string }
      }>
    }

/** The part of `LanguageModelV2CallOptions` / `LanguageModelV3CallOptions` the harness fills. */
export interface AiSdkCallOptions {
  prompt: AiSdkPromptMessage[]
  tools?: Array<{
    type: "function"
    name: string
    description?: string
    inputSchema: Record<string, unknown>
  }>
  temperature?: number
  maxOutputTokens?: number
  abortSignal?: AbortSignal
}

/** Token usage as a `LanguageModelV2` reports it. */
export interface AiSdkUsageV2 {
  inputTokens: number | undefined
  outputTokens: number | undefined
  cachedInputTokens?: number | undefined
}
/** Token usage as a `LanguageModelV3` reports it. */
export interface AiSdkUsageV3 {
  inputTokens: { total: number | undefined; cacheRead: number | undefined; cacheWrite: number | undefined }
  outputTokens: { total: number | undefined }
}

/** The part of a `doGenerate` result the harness reads. */
export interface AiSdkGenerateResult {
  content: Array<{
    type: string
    text?: string
    toolCallId?: string
    toolName?: string
    input?: unknown
    providerExecuted?: boolean
  }>
  finishReason: string | { unified: string; raw: string | undefined }
  usage: AiSdkUsageV2 | AiSdkUsageV3
  response?: { modelId?: string }
}

/** Structurally, a `LanguageModelV2` or `LanguageModelV3`. */
export interface AiSdkLanguageModel {
  readonly specificationVersion: "v2" | "v3"
  readonly provider: string
  readonly modelId: string
  doGenerate(options: AiSdkCallOptions): PromiseLike<AiSdkGenerateResult>
}

function toPrompt(req: ModelRequest): AiSdkPromptMessage[] {
  const out: AiSdkPromptMessage[] = []
  if (req.instructions) out.push({ role: "system", content: req.instructions })
  for (const m of req.messages as readonly Message[]) {
    if (m.role === "user") out.push({ role: "user", content: [{ type: "text", text: m.content }] })
    else if (m.role === "assistant") {
      const content: Extract<AiSdkPromptMessage, { role: "assistant" }>["content"] = []
      if (m.content) content.push({ type: "text", text: m.content })
      for (const c of m.tool_calls ?? [])
        content.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: c.args })
      out.push({ role: "assistant", content })
    } else {
      const part = {
        type: "tool-result" as const,
        toolCallId: m.tool_call_id,
        toolName: m.name,
        output: m.is_error
          ? { type: "error-text" as const, value: m.content }
          : { type: "text" as const, value: m.content },
      }
      // One tool message per batch, as providers expect results grouped after the assistant turn.
      const last = out[out.length - 1]
      if (last?.role === "tool") last.content.push(part)
      else out.push({ role: "tool", content: [part] })
    }
  }
  return out
}

function toUsage(u: AiSdkUsageV2 | AiSdkUsageV3 | undefined): ResponseUsage | undefined {
  if (!u) return undefined
  const out: Record<string, number> = {}
  const put = (k: string, v: number | undefined) => {
    if (typeof v === "number") out[k] = v
  }
  if (typeof u.inputTokens === "object" && u.inputTokens !== null) {
    const v3 = u as AiSdkUsageV3
    put("input_tokens", v3.inputTokens.total)
    put("cache_read_tokens", v3.inputTokens.cacheRead)
    put("cache_write_tokens", v3.inputTokens.cacheWrite)
    put("output_tokens", v3.outputTokens?.total)
  } else {
    const v2 = u as AiSdkUsageV2
    put("input_tokens", v2.inputTokens)
    put("output_tokens", v2.outputTokens)
    put("cache_read_tokens", v2.cachedInputTokens)
  }
  return out as ResponseUsage
}

function parseInput(input: unknown, name: unknown): Record<string, unknown> {
  // The name is the model's: 40 characters of it at most in a failure message.
  const tool = String(name).slice(0, 40)
  let v = input
  if (typeof input === "string") {
    try {
      v = input.trim() === "" ? {} : JSON.parse(input)
    } catch {
      throw new InvalidModelResponseError(`the model sent invalid JSON arguments for tool '${tool}'`)
    }
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new InvalidModelResponseError(`the model sent non-object arguments for tool '${tool}'`)
  return v as Record<string, unknown>
}

/**
 * Wraps an AI SDK language model (`openai("gpt-4o")`, `anthropic(...)`, ...) as a harness `ModelClient`. The
 * harness keeps owning budgets, permits and measurements; the model's own retries, if any, stay inside it.
 */
export function fromAiSdk(model: AiSdkLanguageModel): ModelClient {
  if (model?.specificationVersion !== "v2" && model?.specificationVersion !== "v3")
    throw new InvalidOptionError(
      `fromAiSdk() needs an AI SDK language model with specificationVersion "v2" or "v3", got ${String(model?.specificationVersion)}`,
    )
  return {
    async request(req: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
      const options: AiSdkCallOptions = { prompt: toPrompt(req), abortSignal: signal }
      if (req.tools.length > 0)
        options.tools = req.tools.map((t) => ({
          type: "function",
          name: t.name,
          ...(t.description !== undefined ? { description: t.description } : {}),
          inputSchema: t.parameters as Record<string, unknown>,
        }))
      if (req.settings?.temperature !== undefined) options.temperature = req.settings.temperature
      if (req.settings?.max_tokens !== undefined) options.maxOutputTokens = req.settings.max_tokens
      const r = await model.doGenerate(options)
      // A provider's answer is untrusted, and the harness checks what it gets: no content list gives no parts list
      // (it was a TypeError, or a string read as no parts: an empty answer), and texts, ids and names go on as they
      // are (String() made a missing id "undefined", and a text that was not a string was dropped).
      const content = r?.content
      if (!Array.isArray(content)) return { parts: content as never }
      const parts: ResponsePart[] = []
      const ids = new Set<string>()
      for (const c of content) {
        if (c?.type === "text") parts.push({ type: "text", text: c.text as string })
        // A provider-executed call (a provider's web search or code execution) has run there, its result is in
        // this response: it is not the harness's to run, nor is that result (a tool-result part) a part.
        else if (c?.type === "tool-call" && c.providerExecuted !== true) {
          // Some OpenAI-compatible endpoints (Gemini's, for one) send "" or one id for all of a response's parallel
          // calls, and the AI SDK passes it on (`id ?? generateId()`): each call gets an id of its own, in order, or
          // every parallel answer failed its task. An id that is not a string is left for the harness to refuse.
          let id = c.toolCallId
          if (typeof id === "string") while (id === "" || ids.has(id)) id = `${id}_${parts.length}`
          ids.add(id as string)
          parts.push({
            type: "tool_call",
            id: id as string,
            name: c.toolName as string,
            args: parseInput(c.input, c.toolName),
          })
        }
        // Reasoning, sources, files and provider tool results are not part of the harness's message model; they are
        // dropped.
      }
      const usage = toUsage(r.usage)
      const finish = typeof r.finishReason === "string" ? r.finishReason : r.finishReason?.unified
      const id = r.response?.modelId
      return {
        parts,
        ...(usage ? { usage } : {}),
        model_name: typeof id === "string" ? id : model.modelId,
        provider_name: model.provider,
        ...(typeof finish === "string" ? { finish_reason: finish } : {}),
      }
    },
  }
}
