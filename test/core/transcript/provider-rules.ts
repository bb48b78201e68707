import type { TranscriptFormat } from "../../../src/core/transcript/index.ts"

// Each provider's own structural rules for a request's message list, written from the providers' API
// references and independent of src/ (importing the validator here would make the check agree with it by
// construction). The property tests run this on every repair() output, so "validates clean" and "the
// provider accepts it" cannot drift apart.
//
// Sources: OpenAI Chat Completions message params (ChatCompletion{System,Developer,User,Assistant,Tool}
// MessageParam; "messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
// "An assistant message with 'tool_calls' must be followed by tool messages responding to each
// 'tool_call_id'"). Anthropic Messages (tool_use/tool_result: "Each tool_use block must have a
// corresponding tool_result block in the next message", tool_result blocks first in the user content,
// tool_use.input an object, "tool_use ids must be unique"). AI SDK ModelMessage (UserContent = text |
// image | file; AssistantContent = text | file | reasoning | tool-call | tool-result (provider-executed) |
// tool-approval-request; ToolContent = tool-result | tool-approval-response; MissingToolResultsError).
//
// Not stated here: Anthropic's historical "first message must use the user role" (MessageValidator does
// not police turn order; HistoryGuard.trim keeps a user turn first).

type Rec = Record<string, unknown>
const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)
const isJsonObject = isRec
const nonEmpty = (v: unknown): v is string => typeof v === "string" && v.length > 0

function jsonObjectString(v: unknown): boolean {
  if (typeof v !== "string") return false
  try {
    return isJsonObject(JSON.parse(v))
  } catch {
    return false
  }
}

function extraKeys(m: Rec, allowed: readonly string[]): string[] {
  return Object.keys(m).filter((k) => !allowed.includes(k))
}

/** Every rule the provider would refuse `messages` for; empty when it would accept them. */
export function providerViolations(format: TranscriptFormat, messages: readonly unknown[]): string[] {
  if (format === "openai") return openaiViolations(messages)
  if (format === "anthropic") return anthropicViolations(messages)
  return aiSdkViolations(messages)
}

// Pairing shared by OpenAI and the AI SDK (whose providers send each tool-result as its own tool
// message): the calls of an assistant message are answered, each exactly once, by the run of tool
// messages right after it, and every result in that run answers one of those calls.
class CallPairing {
  readonly errors: string[] = []
  readonly #everCalled = new Set<string>()
  #pending = new Map<string, number>()
  #answered = new Set<string>()

  openCalls(i: number, ids: string[]): void {
    this.close(i)
    for (const id of ids) {
      if (this.#everCalled.has(id)) this.errors.push(`${i}: tool call id '${id}' is used twice`)
      this.#everCalled.add(id)
      this.#pending.set(id, i)
    }
    this.#answered = new Set()
  }

  answer(i: number, id: unknown): void {
    if (typeof id !== "string" || !this.#pending.has(id)) {
      const dup = typeof id === "string" && this.#answered.has(id)
      this.errors.push(
        dup
          ? `${i}: second result for tool call '${id}'`
          : `${i}: result for '${String(id)}' does not answer a call of the preceding assistant message`,
      )
      return
    }
    this.#pending.delete(id)
    this.#answered.add(id)
  }

  /** A message that may not sit inside a call's result run. */
  close(i: number): void {
    for (const [id, at] of this.#pending)
      this.errors.push(`${at}: tool call '${id}' has no result before message ${i}`)
    this.#pending = new Map()
    this.#answered = new Set()
  }

  /** Results may only follow an assistant message with calls (or other results for it). */
  get inRun(): boolean {
    return this.#pending.size > 0 || this.#answered.size > 0
  }
}

function openaiViolations(messages: readonly unknown[]): string[] {
  const errors: string[] = []
  const pairing = new CallPairing()
  const textParts = (c: unknown) =>
    Array.isArray(c) && c.length > 0 && c.every((p) => isRec(p) && p.type === "text")
  for (const [i, m] of messages.entries()) {
    if (!isRec(m)) {
      errors.push(`${i}: not an object`)
      continue
    }
    const bad = (rule: string) => errors.push(`${i} (${String(m.role)}): ${rule}`)
    switch (m.role) {
      case "system":
      case "developer":
        pairing.close(i)
        if (extraKeys(m, ["role", "content", "name"]).length)
          bad(`unexpected keys ${extraKeys(m, ["role", "content", "name"])}`)
        if (!(typeof m.content === "string" || textParts(m.content))) bad("content must be text")
        break
      case "user": {
        pairing.close(i)
        const extra = extraKeys(m, ["role", "content", "name"])
        if (extra.length) bad(`unexpected keys ${extra}`)
        const partsOk =
          Array.isArray(m.content) &&
          m.content.length > 0 &&
          m.content.every(
            (p) => isRec(p) && ["text", "image_url", "input_audio", "file"].includes(String(p.type)),
          )
        if (!(typeof m.content === "string" || partsOk))
          bad("content must be a string or text/image/audio/file parts")
        break
      }
      case "assistant": {
        const extra = extraKeys(m, [
          "role",
          "content",
          "name",
          "tool_calls",
          "refusal",
          "audio",
          "function_call",
        ])
        if (extra.length) bad(`unexpected keys ${extra}`)
        const calls = m.tool_calls
        if (calls !== undefined && !(Array.isArray(calls) && calls.length > 0))
          bad("tool_calls must be a non-empty array")
        const hasCalls = Array.isArray(calls) && calls.length > 0
        const contentOk =
          typeof m.content === "string" ||
          ((m.content === null || m.content === undefined) && (hasCalls || nonEmpty(m.refusal))) ||
          (Array.isArray(m.content) &&
            m.content.every((p) => isRec(p) && ["text", "refusal"].includes(String(p.type))))
        if (!contentOk) bad("content must be text, or null with tool_calls")
        const ids: string[] = []
        for (const [k, c] of (hasCalls ? (calls as unknown[]) : []).entries()) {
          if (!isRec(c) || c.type !== "function" || !nonEmpty(c.id) || !isRec(c.function)) {
            bad(`tool_calls[${k}] must be { id, type: "function", function }`)
            continue
          }
          if (!nonEmpty(c.function.name)) bad(`tool_calls[${k}].function.name must be a string`)
          if (!jsonObjectString(c.function.arguments))
            bad(`tool_calls[${k}].function.arguments must be a JSON object string`)
          if (ids.includes(c.id)) bad(`tool_calls[${k}] repeats id '${c.id}'`)
          ids.push(c.id)
        }
        if (hasCalls) pairing.openCalls(i, ids)
        else pairing.close(i)
        break
      }
      case "tool": {
        const extra = extraKeys(m, ["role", "content", "tool_call_id"])
        if (extra.length) bad(`unexpected keys ${extra}`)
        if (!(typeof m.content === "string" || textParts(m.content)))
          bad("content must be a string or text parts")
        if (!pairing.inRun)
          bad(`'${String(m.tool_call_id)}' must be a response to a preceding message with 'tool_calls'`)
        else pairing.answer(i, m.tool_call_id)
        break
      }
      default:
        pairing.close(i)
        bad("invalid role")
    }
  }
  pairing.close(messages.length)
  return [...errors, ...pairing.errors]
}

const ANTHROPIC_USER_BLOCKS = ["text", "image", "document", "search_result", "tool_result"]
const ANTHROPIC_ASSISTANT_BLOCKS = [
  "text",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "server_tool_use",
  "web_search_tool_result",
]

function anthropicViolations(messages: readonly unknown[]): string[] {
  const errors: string[] = []
  const everUsed = new Set<string>()
  let expected: string[] = [] // tool_use ids of the previous message, which this one must answer
  for (const [i, m] of messages.entries()) {
    if (!isRec(m)) {
      errors.push(`${i}: not an object`)
      continue
    }
    const bad = (rule: string) => errors.push(`${i} (${String(m.role)}): ${rule}`)
    if (m.role !== "user" && m.role !== "assistant") bad("role must be user or assistant")
    const extra = extraKeys(m, ["role", "content"])
    if (extra.length) bad(`unexpected keys ${extra}`)
    const blocks: Rec[] = []
    // "All messages must have non-empty content except for the optional final assistant message."
    const mayBeEmpty = i === messages.length - 1 && m.role === "assistant"
    if (typeof m.content === "string") {
      if (m.content.length === 0 && !mayBeEmpty) bad("content must be non-empty")
    } else if (Array.isArray(m.content) && (m.content.length > 0 || mayBeEmpty)) {
      for (const b of m.content) {
        if (isRec(b)) blocks.push(b)
        else bad("content blocks must be objects")
      }
    } else bad("content must be a non-empty string or array")
    const allowed = m.role === "assistant" ? ANTHROPIC_ASSISTANT_BLOCKS : ANTHROPIC_USER_BLOCKS
    for (const b of blocks) {
      if (!allowed.includes(String(b.type)))
        bad(`${String(b.type)} blocks are not allowed in ${String(m.role)} messages`)
      if (b.type === "text" && !nonEmpty(b.text)) bad("text content blocks must be non-empty")
      if (b.type === "tool_use") {
        if (!(typeof b.id === "string" && /^[a-zA-Z0-9_-]+$/.test(b.id)))
          bad("tool_use.id must match ^[a-zA-Z0-9_-]+$")
        if (!nonEmpty(b.name)) bad("tool_use.name must be a string")
        if (!isJsonObject(b.input)) bad(`tool_use '${String(b.id)}': input should be a valid dictionary`)
      }
      if (b.type === "tool_result") {
        if (!nonEmpty(b.tool_use_id)) bad("tool_result.tool_use_id must be a string")
        const c = b.content
        const contentOk =
          c === undefined ||
          typeof c === "string" ||
          (Array.isArray(c) &&
            c.every(
              (x) => isRec(x) && ["text", "image", "document", "search_result"].includes(String(x.type)),
            ))
        if (!contentOk) bad("tool_result.content must be a string or text/image blocks")
        if (b.is_error !== undefined && typeof b.is_error !== "boolean")
          bad("tool_result.is_error must be a boolean")
      }
    }
    // Pairing: the previous message's tool_use ids are answered here, first, each exactly once.
    const results = blocks.filter((b) => b.type === "tool_result")
    const leading = blocks.findIndex((b) => b.type !== "tool_result")
    if (leading !== -1 && blocks.slice(leading).some((b) => b.type === "tool_result"))
      bad("tool_result blocks must come first in the content array")
    const answered = new Set<string>()
    for (const r of results) {
      const id = String(r.tool_use_id)
      if (!expected.includes(id))
        bad(`unexpected tool_use_id '${id}': no tool_use for it in the previous message`)
      else if (answered.has(id)) bad(`second tool_result for '${id}'`)
      answered.add(id)
    }
    for (const id of expected)
      if (!answered.has(id))
        errors.push(`${i - 1}: tool_use '${id}' has no tool_result block in the next message`)
    expected = []
    for (const b of blocks) {
      if (b.type !== "tool_use" || m.role !== "assistant") continue
      const id = String(b.id)
      if (everUsed.has(id)) bad(`tool_use ids must be unique ('${id}')`)
      everUsed.add(id)
      expected.push(id)
    }
  }
  for (const id of expected)
    errors.push(`${messages.length - 1}: tool_use '${id}' has no tool_result block in the next message`)
  return errors
}

const AI_USER_PARTS = ["text", "image", "file"]
const AI_ASSISTANT_PARTS = [
  "text",
  "file",
  "reasoning",
  "reasoning-file",
  "tool-call",
  "tool-result",
  "tool-approval-request",
]
const AI_TOOL_PARTS = ["tool-result", "tool-approval-response"]
const AI_OUTPUT_TYPES = ["text", "json", "error-text", "error-json", "content", "execution-denied"]

function aiSdkViolations(messages: readonly unknown[]): string[] {
  const errors: string[] = []
  const pairing = new CallPairing()
  const providerCalls = new Set<string>()
  const resultShapeOk = (p: Rec) =>
    nonEmpty(p.toolCallId) &&
    typeof p.toolName === "string" &&
    ((isRec(p.output) && AI_OUTPUT_TYPES.includes(String(p.output.type))) ||
      (!("output" in p) && "result" in p))
  for (const [i, m] of messages.entries()) {
    if (!isRec(m)) {
      errors.push(`${i}: not an object`)
      continue
    }
    const bad = (rule: string) => errors.push(`${i} (${String(m.role)}): ${rule}`)
    const extra = extraKeys(m, ["role", "content", "providerOptions"])
    if (extra.length) bad(`unexpected keys ${extra}`)
    const parts = Array.isArray(m.content) ? m.content : []
    const types = (allowed: string[]) => {
      for (const p of parts)
        if (!isRec(p) || !allowed.includes(String(p.type)))
          bad(`${isRec(p) ? String(p.type) : typeof p} parts are not allowed in ${String(m.role)} content`)
    }
    switch (m.role) {
      case "system":
        pairing.close(i)
        if (typeof m.content !== "string") bad("content must be a string")
        break
      case "user":
        pairing.close(i)
        if (typeof m.content !== "string" && !Array.isArray(m.content))
          bad("content must be a string or parts")
        types(AI_USER_PARTS)
        break
      case "assistant": {
        if (typeof m.content !== "string" && !Array.isArray(m.content))
          bad("content must be a string or parts")
        types(AI_ASSISTANT_PARTS)
        const ids: string[] = []
        for (const p of parts.filter(isRec)) {
          if (p.type === "tool-call") {
            if (!nonEmpty(p.toolCallId) || !nonEmpty(p.toolName))
              bad("tool-call needs toolCallId and toolName")
            const args = "input" in p || !("args" in p) ? p.input : p.args
            if (!isJsonObject(args)) bad(`tool-call '${String(p.toolCallId)}': input must be a JSON object`)
            if (p.providerExecuted === true) providerCalls.add(String(p.toolCallId))
            else ids.push(String(p.toolCallId))
          }
          if (p.type === "tool-result") {
            if (!resultShapeOk(p)) bad("tool-result needs toolCallId, toolName and a typed output")
            if (!providerCalls.has(String(p.toolCallId)))
              bad(
                `tool-result '${String(p.toolCallId)}' in assistant content must answer a provider-executed call`,
              )
          }
        }
        if (ids.length > 0) pairing.openCalls(i, ids)
        else pairing.close(i)
        break
      }
      case "tool":
        if (!Array.isArray(m.content) || m.content.length === 0) bad("content must be a non-empty array")
        types(AI_TOOL_PARTS)
        for (const p of parts.filter(isRec)) {
          if (p.type !== "tool-result") continue
          if (!resultShapeOk(p)) bad("tool-result needs toolCallId, toolName and a typed output")
          if (!pairing.inRun)
            bad(`tool-result '${String(p.toolCallId)}' does not follow an assistant message with that call`)
          else pairing.answer(i, p.toolCallId)
        }
        break
      default:
        pairing.close(i)
        bad("invalid role")
    }
  }
  pairing.close(messages.length)
  return [...errors, ...pairing.errors]
}
