import { interruptedResultText, isInterruptedText } from "../interrupted.ts"
import type { Message } from "../types.ts"
import { composeContent, contentParts, type FormatAdapter, type Part, stringOrUndefined } from "./adapter.ts"

// Anthropic Messages: every tool_use must be answered by a tool_result block in the very next (user)
// message, and those result blocks come before any other content there.
export const anthropicAdapter: FormatAdapter = {
  format: "anthropic",
  roles: new Set(["user", "assistant"]),
  systemRoles: new Set(),
  carrierRole: "user",
  blockShape: "single",
  idPrefix: "toolu_missing_",

  decompose(message) {
    const role = typeof message.role === "string" ? message.role : ""
    const { content, ...shell } = message
    const parts = contentParts(
      content,
      (b): Part => {
        if (b.type === "tool_use")
          return { kind: "call", id: stringOrUndefined(b.id), name: stringOrUndefined(b.name), raw: b }
        if (b.type === "tool_result") {
          const isError = b.is_error === true || isInterruptedText(b.content)
          return { kind: "result", id: stringOrUndefined(b.tool_use_id), isError, raw: b }
        }
        return { kind: "other", raw: b }
      },
      "text",
    )
    return { role, shell, parts }
  },

  compose: composeContent,

  withId(part, id) {
    return part.kind === "result"
      ? { ...(part.raw as Message), tool_use_id: id }
      : { ...(part.raw as Message), id }
  },

  synthetic(call) {
    return {
      kind: "result",
      id: call.id,
      isError: true,
      raw: {
        type: "tool_result",
        tool_use_id: call.id,
        content: interruptedResultText(call.name, call.id),
        is_error: true,
      },
    }
  },

  check: () => [],
  fix: (m) => m,
}
