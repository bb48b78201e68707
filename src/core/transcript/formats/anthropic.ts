import { isSyntheticResultText } from "../interrupted.ts"
import { objectArgumentsProblem } from "../invalid-arguments.ts"
import type { Message } from "../types.ts"
import { composeContent, contentParts, type FormatAdapter, type Part, stringOrUndefined } from "./adapter.ts"

// Anthropic Messages: every tool_use must be answered by a tool_result block in the very next (user)
// message, and those result blocks come before any other content there. A tool_result in an assistant
// message is always misplaced (server tools answer with their own block types, not tool_result).
export const anthropicAdapter: FormatAdapter = {
  format: "anthropic",
  roles: new Set(["user", "assistant"]),
  // Not a role Anthropic takes, but an app may keep its system prompt in the list and send it as `system`: trim()
  // dropped it first, and the trimmed list became the drop check's baseline.
  systemRoles: new Set(["system"]),
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
          const isError = b.is_error === true || isSyntheticResultText(b.content)
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

  synthetic(call, _sample, text) {
    return {
      kind: "result",
      id: call.id,
      isError: true,
      raw: { type: "tool_result", tool_use_id: call.id, content: text, is_error: true },
    }
  },

  argumentsProblem: (part) => objectArgumentsProblem((part.raw as Message).input, "input"),
  rawArguments: (part) => (part.raw as Message).input,
  withEmptyArguments: (part) => ({ ...(part.raw as Message), input: {} }),

  // "All messages must have non-empty content except for the optional final assistant message."
  isEmpty: (m, last) =>
    !(last && m.role === "assistant") &&
    (m.content === undefined ||
      m.content === null ||
      m.content === "" ||
      (Array.isArray(m.content) && m.content.length === 0)),

  check: () => [],
  fix: (m) => m,
}
