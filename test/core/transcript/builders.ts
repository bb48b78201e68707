import type { TranscriptFormat } from "../../../src/core/transcript/index.ts"

export type Msg = Record<string, unknown>
export interface Call {
  id: string
  name: string
  args?: Record<string, unknown>
  /** Sent verbatim as the format's arguments field (for malformed arguments). */
  rawArgs?: unknown
}
export interface Result {
  id: string
  text: string
  error?: boolean
}

/** Builds the same conversation shape in each provider format, the way each SDK serializes it. */
export interface Builder {
  format: TranscriptFormat
  system(text: string): Msg[]
  user(text: string): Msg
  assistant(text: string, calls?: Call[]): Msg
  /** Tool results as the format carries them (OpenAI: one message each; others: one message). */
  results(results: Result[], trailingText?: string): Msg[]
  /**
   * The same results in a role the format does not allow them in (AI SDK: a user message; Anthropic: an
   * assistant message; OpenAI: user messages carrying tool_call_id), as frameworks mis-serialize them.
   */
  misplaced(results: Result[], trailingText?: string): Msg[]
  /**
   * An assistant message whose content also carries results for its own calls (Anthropic tool_result and
   * AI SDK tool-result blocks appended to the assistant turn). OpenAI has no such shape: the results
   * follow as user messages with tool_call_id.
   */
  assistantAnswering(text: string, calls: Call[], results: Result[]): Msg[]
}

const argsOf = (c: Call): unknown => ("rawArgs" in c ? c.rawArgs : (c.args ?? {}))

export const openai: Builder = {
  format: "openai",
  system: (text) => [{ role: "system", content: text }],
  user: (text) => ({ role: "user", content: text }),
  assistant: (text, calls = []) => ({
    role: "assistant",
    content: text || null,
    ...(calls.length > 0
      ? {
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: "rawArgs" in c ? c.rawArgs : JSON.stringify(c.args ?? {}) },
          })),
        }
      : {}),
  }),
  results: (rs, trailingText) => [
    ...rs.map((r) => ({ role: "tool", tool_call_id: r.id, content: r.text })),
    ...(trailingText ? [{ role: "user", content: trailingText }] : []),
  ],
  misplaced: (rs, trailingText) => [
    ...rs.map((r) => ({ role: "user", tool_call_id: r.id, content: r.text })),
    ...(trailingText ? [{ role: "user", content: trailingText }] : []),
  ],
  assistantAnswering: (text, calls, rs) => [openai.assistant(text, calls), ...openai.misplaced(rs)],
}

export const anthropic: Builder = {
  format: "anthropic",
  system: () => [],
  user: (text) => ({ role: "user", content: text }),
  assistant: (text, calls = []) => ({
    role: "assistant",
    content: [
      ...(text ? [{ type: "text", text }] : []),
      ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: argsOf(c) })),
    ],
  }),
  results: (rs, trailingText) => [
    {
      role: "user",
      content: [
        ...rs.map((r) => ({
          type: "tool_result",
          tool_use_id: r.id,
          content: r.text,
          ...(r.error ? { is_error: true } : {}),
        })),
        ...(trailingText ? [{ type: "text", text: trailingText }] : []),
      ],
    },
  ],
  misplaced: (rs, trailingText) => [
    {
      role: "assistant",
      content: [...(trailingText ? [{ type: "text", text: trailingText }] : []), ...rs.map(anthropicResult)],
    },
  ],
  assistantAnswering: (text, calls, rs) => {
    const m = anthropic.assistant(text, calls)
    return [{ ...m, content: [...(m.content as unknown[]), ...rs.map(anthropicResult)] }]
  },
}

function anthropicResult(r: Result): Msg {
  return { type: "tool_result", tool_use_id: r.id, content: r.text, ...(r.error ? { is_error: true } : {}) }
}

export const aiSdk: Builder = {
  format: "ai-sdk",
  system: (text) => [{ role: "system", content: text }],
  user: (text) => ({ role: "user", content: text }),
  assistant: (text, calls = []) => ({
    role: "assistant",
    content: [
      ...(text ? [{ type: "text", text }] : []),
      ...calls.map((c) => ({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: argsOf(c) })),
    ],
  }),
  results: (rs, trailingText) => [
    { role: "tool", content: rs.map(aiSdkResult) },
    ...(trailingText ? [{ role: "user", content: trailingText }] : []),
  ],
  misplaced: (rs, trailingText) => [
    {
      role: "user",
      content: [...(trailingText ? [{ type: "text", text: trailingText }] : []), ...rs.map(aiSdkResult)],
    },
  ],
  assistantAnswering: (text, calls, rs) => {
    const m = aiSdk.assistant(text, calls)
    return [{ ...m, content: [...(m.content as unknown[]), ...rs.map(aiSdkResult)] }]
  },
}

function aiSdkResult(r: Result): Msg {
  return {
    type: "tool-result",
    toolCallId: r.id,
    toolName: "tool",
    output: r.error ? { type: "error-text", value: r.text } : { type: "text", value: r.text },
  }
}

export const builders = [openai, anthropic, aiSdk]
