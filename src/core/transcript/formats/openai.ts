import { safeString } from "../../repr.ts"
import { isRecord } from "../clone.ts"
import { isSyntheticResultText } from "../interrupted.ts"
import { jsonArgumentsProblem } from "../invalid-arguments.ts"
import type { Message, RepairAction, Violation } from "../types.ts"
import { type FormatAdapter, type Part, stringOrUndefined } from "./adapter.ts"

// OpenAI Chat Completions: results are whole `tool` messages that must follow the assistant directly.
// A `user` message carrying a tool_call_id is a tool result in the wrong role (frameworks that downgrade
// tool messages for models without tool support write these): the call it answers stays unanswered for
// the API, and the field itself is not part of a user message.
const calls = (m: Message): Record<string, unknown>[] =>
  Array.isArray(m.tool_calls) ? (m.tool_calls.filter(isRecord) as Record<string, unknown>[]) : []

// Responses-API ids (fc_) mixed with chat ids (call_) in one message are the same calls serialized twice. An id
// repair() gave a call that had none (call_missing_) is a copy of nothing: counted, repair() would drop real calls.
const mixedBlocks = (m: Message): boolean => {
  const ids = calls(m).map((c) => safeString(c.id ?? ""))
  return ids.some((id) => id.startsWith("fc_")) && ids.some((id) => /^call_(?!missing_)/.test(id))
}

const isTextPart = (p: unknown): boolean => isRecord(p) && p.type === "text"

// The result moves into a tool message, which carries text only; images or files stay behind as the
// user message they were sent in.
function misplacedResult(message: Message): { shell: Message; part: Part } {
  const { tool_call_id, content, ...rest } = message
  const text = Array.isArray(content) ? content.filter(isTextPart) : content
  const media = Array.isArray(content) ? content.filter((p) => !isTextPart(p)) : []
  const part: Part = {
    kind: "result",
    id: stringOrUndefined(tool_call_id),
    isError: isSyntheticResultText(content),
    raw: {
      role: "tool",
      tool_call_id,
      content: text === undefined || text === null || (Array.isArray(text) && text.length === 0) ? "" : text,
    },
  }
  return { shell: media.length > 0 ? { ...rest, content: media } : { role: "tool" }, part }
}

const fnOf = (raw: unknown): Record<string, unknown> =>
  isRecord(raw) && isRecord(raw.function) ? raw.function : {}
// A custom tool call ({ type: "custom", custom: { name, input } }) takes free text, not JSON arguments.
const customOf = (raw: unknown): Record<string, unknown> | undefined =>
  isRecord(raw) && isRecord(raw.custom) ? raw.custom : undefined

const badIndex = (m: Message): boolean =>
  calls(m)
    .filter((c) => typeof c.index === "number")
    .some((c, i) => c.index !== i)

// Serialization artifacts: what check() reports, and how fix() removes it, in the order fix() applies them.
const RULES: [Violation, (m: Message) => boolean, string, RepairAction["kind"], (m: Message) => void][] = [
  [
    "parsed_artifact",
    (m) => "parsed" in m,
    "carries a 'parsed' field",
    "removed_parsed_artifact",
    (m) => {
      delete m.parsed
      if (m.refusal == null) delete m.refusal
    },
  ],
  // A serializer's blank column on a user message: not a result, and a key the API refuses there.
  [
    "blank_tool_call_id",
    (m) => m.role === "user" && "tool_call_id" in m && !stringOrUndefined(m.tool_call_id),
    "has a blank tool_call_id, which a user message may not carry",
    "removed_blank_tool_call_id",
    (m) => delete m.tool_call_id,
  ],
  // A null entry (a streamed call that never arrived) is opaque content to us, but the API refuses it.
  [
    "invalid_tool_call",
    (m) => Array.isArray(m.tool_calls) && m.tool_calls.length > calls(m).length,
    "has a tool_calls entry that is not an object",
    "dropped_invalid_tool_call",
    (m) => {
      m.tool_calls = calls(m)
    },
  ],
  [
    "empty_tool_calls",
    (m) => Array.isArray(m.tool_calls) && m.tool_calls.length === 0,
    "has an empty tool_calls list",
    "removed_empty_tool_calls",
    (m) => delete m.tool_calls,
  ],
  [
    "duplicate_tool_call_blocks",
    mixedBlocks,
    "mixes fc_* and call_* tool calls (the same calls serialized twice)",
    "dropped_duplicate_call_blocks",
    (m) => {
      m.tool_calls = (m.tool_calls as unknown[]).filter(
        (c) => !safeString(isRecord(c) ? c.id : "").startsWith("fc_"),
      )
    },
  ],
  [
    "nonzero_tool_call_index",
    badIndex,
    "has tool_calls whose index does not start at 0 and count up",
    "reindexed_tool_calls",
    (m) => {
      let n = 0
      m.tool_calls = (m.tool_calls as unknown[]).map((c) =>
        isRecord(c) && typeof c.index === "number" ? { ...c, index: n++ } : c,
      )
    },
  ],
]

export const openaiAdapter: FormatAdapter = {
  format: "openai",
  roles: new Set(["system", "developer", "user", "assistant", "tool", "function"]),
  systemRoles: new Set(["system", "developer"]),
  carrierRole: "tool",
  blockShape: "per-result",
  idPrefix: "call_missing_",

  decompose(message) {
    const role = typeof message.role === "string" ? message.role : ""
    if (role === "tool") {
      const part: Part = {
        kind: "result",
        id: stringOrUndefined(message.tool_call_id),
        isError: isSyntheticResultText(message.content),
        raw: message,
      }
      return { role, shell: { role: "tool" }, parts: [part] }
    }
    // Only a real id makes it a result: a null or empty tool_call_id is a serializer's blank column.
    if (role === "user" && stringOrUndefined(message.tool_call_id)) {
      const { shell, part } = misplacedResult(message)
      return { role, shell, parts: [part] }
    }
    if (!Array.isArray(message.tool_calls)) return { role, shell: message, parts: [] }
    const { tool_calls, ...shell } = message
    const parts = (tool_calls as unknown[]).map((c): Part => {
      if (!isRecord(c)) return { kind: "other", raw: c }
      const fn = customOf(c) ?? fnOf(c)
      return { kind: "call", id: stringOrUndefined(c.id), name: stringOrUndefined(fn.name), raw: c }
    })
    return { role, shell, parts }
  },

  compose(shell, parts) {
    if (shell.role === "tool")
      return (parts.find((p) => p.kind === "result")?.raw as Message | undefined) ?? null
    if (parts.length === 0) return shell
    return { ...shell, tool_calls: parts.map((p) => p.raw) }
  },

  withId(part, id) {
    return part.kind === "result"
      ? { ...(part.raw as Message), tool_call_id: id }
      : { ...(part.raw as Message), id }
  },

  synthetic(call, _sample, text) {
    return {
      kind: "result",
      id: call.id,
      isError: true,
      raw: { role: "tool", tool_call_id: call.id, content: text },
    }
  },

  argumentsProblem: (part) =>
    customOf(part.raw) ? undefined : jsonArgumentsProblem(fnOf(part.raw).arguments, "function.arguments"),
  rawArguments: (part) => fnOf(part.raw).arguments,
  withEmptyArguments: (part) => ({
    ...(part.raw as Message),
    function: { ...fnOf(part.raw), arguments: "{}" },
  }),

  // Content may be null only on an assistant message that carries calls, a refusal or audio instead.
  isEmpty(m) {
    const none =
      m.content === undefined || m.content === null || (Array.isArray(m.content) && m.content.length === 0)
    if (m.role === "assistant")
      return (
        none &&
        !(Array.isArray(m.tool_calls) && m.tool_calls.length > 0) &&
        !m.refusal &&
        !m.function_call &&
        !m.audio
      )
    return none && (m.role === "user" || m.role === "system" || m.role === "developer")
  },

  check: (m, i) =>
    RULES.filter((r) => r[1](m)).map(([violation, , reason]) => ({
      violation,
      messageIndex: i,
      reason: `Message ${i} ${reason}.`,
    })),

  // The message is repair()'s own copy.
  fix(m, i, actions) {
    for (const [, applies, , kind, fix] of RULES)
      if (applies(m)) {
        fix(m)
        actions.push({ kind, messageIndex: i })
      }
    return m
  },
}
