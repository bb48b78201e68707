import { safeString } from "../../repr.ts"
import { isRecord } from "../clone.ts"
import { isSyntheticResultText } from "../interrupted.ts"
import { jsonArgumentsProblem } from "../invalid-arguments.ts"
import type { Message, TranscriptIssue } from "../types.ts"
import { type FormatAdapter, type Part, stringOrUndefined } from "./adapter.ts"

// OpenAI Chat Completions: results are whole `tool` messages that must follow the assistant directly.
// A `user` message carrying a tool_call_id is a tool result in the wrong role (frameworks that downgrade
// tool messages for models without tool support write these): the call it answers stays unanswered for
// the API, and the field itself is not part of a user message.
const calls = (m: Message): Record<string, unknown>[] =>
  Array.isArray(m.tool_calls) ? (m.tool_calls.filter(isRecord) as Record<string, unknown>[]) : []

// Responses-API ids (fc_) mixed with chat ids (call_) in one message are the same calls serialized twice.
const mixedBlocks = (m: Message): boolean => {
  const ids = calls(m).map((c) => safeString(c.id ?? ""))
  return ids.some((id) => id.startsWith("fc_")) && ids.some((id) => id.startsWith("call_"))
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

const badIndex = (m: Message): boolean =>
  calls(m)
    .filter((c) => typeof c.index === "number")
    .some((c, i) => c.index !== i)

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
      const fn = isRecord(c.function) ? c.function : {}
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

  argumentsProblem: (part) => jsonArgumentsProblem(fnOf(part.raw).arguments, "function.arguments"),
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

  check(m, i) {
    const out: TranscriptIssue[] = []
    if (Array.isArray(m.tool_calls) && m.tool_calls.length === 0) {
      out.push({
        violation: "empty_tool_calls",
        messageIndex: i,
        reason: `Message ${i} has an empty tool_calls list.`,
      })
    }
    if (mixedBlocks(m)) {
      out.push({
        violation: "duplicate_tool_call_blocks",
        messageIndex: i,
        reason: `Message ${i} mixes fc_* and call_* tool calls (the same calls serialized twice).`,
      })
    }
    if (badIndex(m)) {
      out.push({
        violation: "nonzero_tool_call_index",
        messageIndex: i,
        reason: `Message ${i} has tool_calls whose index does not start at 0 and count up.`,
      })
    }
    if ("parsed" in m) {
      out.push({
        violation: "parsed_artifact",
        messageIndex: i,
        reason: `Message ${i} carries a 'parsed' field.`,
      })
    }
    return out
  },

  fix(m, i, actions) {
    let out = m
    if ("parsed" in out) {
      const { parsed: _parsed, ...rest } = out
      if (rest.refusal === null || rest.refusal === undefined) delete rest.refusal
      out = rest
      actions.push({ kind: "removed_parsed_artifact", messageIndex: i })
    }
    if (Array.isArray(out.tool_calls) && out.tool_calls.length === 0) {
      const { tool_calls: _empty, ...rest } = out
      out = rest
      actions.push({ kind: "removed_empty_tool_calls", messageIndex: i })
    }
    if (mixedBlocks(out)) {
      const kept = (out.tool_calls as unknown[]).filter(
        (c) => !safeString(isRecord(c) ? c.id : "").startsWith("fc_"),
      )
      out = { ...out, tool_calls: kept }
      actions.push({ kind: "dropped_duplicate_call_blocks", messageIndex: i })
    }
    if (badIndex(out)) {
      let n = 0
      const tc = (out.tool_calls as unknown[]).map((c) =>
        isRecord(c) && typeof c.index === "number" ? { ...c, index: n++ } : c,
      )
      out = { ...out, tool_calls: tc }
      actions.push({ kind: "reindexed_tool_calls", messageIndex: i })
    }
    return out
  },
}
