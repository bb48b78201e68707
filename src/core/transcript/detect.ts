import { isRecord } from "./clone.ts"
import { stringOrUndefined } from "./formats/adapter.ts"
import type { TranscriptFormat } from "./types.ts"

const ANTHROPIC_BLOCKS = new Set([
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
  "server_tool_use",
])
const AI_SDK_PARTS = new Set([
  "tool-call",
  "tool-result",
  "reasoning",
  "tool-approval-request",
  "tool-approval-response",
])
const OPENAI_PARTS = new Set(["image_url", "input_audio", "refusal"])

/**
 * Guesses the format from the first decisive marker. Plain-text transcripts are reported as "openai",
 * which validates them the same way as the other formats would.
 */
export function detectFormat(messages: readonly unknown[]): TranscriptFormat {
  return decisiveFormat(messages) ?? "openai"
}

/** The format the first decisive marker names, or null for a plain-text transcript that any format could be. */
export function decisiveFormat(messages: readonly unknown[]): TranscriptFormat | null {
  for (const m of messages) {
    if (!isRecord(m)) continue
    // Only a filled field counts: a store with one column per field writes null or [] into every message, and an
    // Anthropic or AI SDK transcript read as OpenAI's passed check() with its calls unanswered.
    const filled =
      (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) || stringOrUndefined(m.tool_call_id)
    if (filled || m.role === "function" || m.role === "developer") return "openai"
    if (m.role === "tool") return Array.isArray(m.content) ? "ai-sdk" : "openai"
    if (!Array.isArray(m.content)) continue
    for (const b of m.content) {
      const type = isRecord(b) ? b.type : undefined
      if (typeof type !== "string") continue
      if (ANTHROPIC_BLOCKS.has(type)) return "anthropic"
      if (AI_SDK_PARTS.has(type)) return "ai-sdk"
      if (OPENAI_PARTS.has(type)) return "openai"
    }
  }
  return null
}
