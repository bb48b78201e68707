import { isRecord } from "../clone.ts"
import { interruptedResultText, isInterruptedText } from "../interrupted.ts"
import type { Message } from "../types.ts"
import { composeContent, contentParts, type FormatAdapter, type Part, stringOrUndefined } from "./adapter.ts"

// Vercel AI SDK ModelMessage: tool-call parts in assistant messages, tool-result parts in the tool
// messages right after. Provider-executed calls carry their result inside the assistant message, so they
// are left alone.
function resultIsError(b: Record<string, unknown>): boolean {
  if (b.isError === true) return true
  const output = isRecord(b.output) ? b.output : undefined
  if (typeof output?.type === "string" && output.type.startsWith("error")) return true
  return isInterruptedText(output?.value ?? b.result)
}

export const aiSdkAdapter: FormatAdapter = {
  format: "ai-sdk",
  roles: new Set(["system", "user", "assistant", "tool"]),
  systemRoles: new Set(["system"]),
  carrierRole: "tool",
  blockShape: "grouped",
  idPrefix: "call_missing_",

  decompose(message) {
    const role = typeof message.role === "string" ? message.role : ""
    const { content, ...shell } = message
    const parts = contentParts(
      content,
      (b): Part => {
        if (b.type === "tool-call" && b.providerExecuted !== true) {
          return {
            kind: "call",
            id: stringOrUndefined(b.toolCallId),
            name: stringOrUndefined(b.toolName),
            raw: b,
          }
        }
        if (b.type === "tool-result" && role === "tool") {
          return { kind: "result", id: stringOrUndefined(b.toolCallId), isError: resultIsError(b), raw: b }
        }
        return { kind: "other", raw: b }
      },
      "text",
    )
    return { role, shell, parts }
  },

  compose: composeContent,

  withId(part, id) {
    return { ...(part.raw as Message), toolCallId: id }
  },

  // AI SDK 4 results use `result` + `isError`; 5 and later use a typed `output`. Match the transcript.
  synthetic(call, sample) {
    const text = interruptedResultText(call.name, call.id)
    const legacy = sample.some((d) =>
      d.parts.some(
        (p) => p.kind === "result" && isRecord(p.raw) && "result" in p.raw && !("output" in p.raw),
      ),
    )
    const base = { type: "tool-result", toolCallId: call.id, toolName: call.name ?? "unknown" }
    return {
      kind: "result",
      id: call.id,
      isError: true,
      raw: legacy
        ? { ...base, result: text, isError: true }
        : { ...base, output: { type: "error-text", value: text } },
    }
  },

  check: () => [],
  fix: (m) => m,
}
