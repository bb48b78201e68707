import { safeString } from "../repr.ts"
import { hasCycle, isRecord } from "./clone.ts"
import { DROP_ADVICE, MessageValidationError } from "./errors.ts"
import { CYCLE } from "./validate.ts"

// The original counted only `content`; tool-call arguments and structured results (AI SDK `input` /
// `output`, OpenAI `function.arguments`) are often the bulk of a transcript, so they count here too.
// `index`: the message's position, for the error about a message holding itself.
export function messageText(message: unknown, index = 0): string {
  if (typeof message === "string") return message
  if (!isRecord(message)) return safeString(message)
  // An OpenAI assistant's refusal is text the model wrote, sent back as input: 400 KB of it counted nothing.
  const parts = [
    contentText(message.content, index),
    typeof message.refusal === "string" ? message.refusal : "",
  ]
  // A legacy OpenAI message holds its one call as function_call: { name, arguments }, not as tool_calls. Left out,
  // 100 KB of arguments counted nothing, and every such message had the same fingerprint. Read next to tool_calls
  // too: a serializer may write `tool_calls: []` beside it.
  const calls = [
    ...(Array.isArray(message.tool_calls) ? message.tool_calls : []),
    { function: message.function_call },
  ]
  for (const c of calls) {
    // OpenAI custom tool calls carry { name, input } (free text) instead of function.arguments.
    const f = isRecord(c) && (c.function ?? c.custom)
    // Arguments given as an object count as their JSON (as "[object Object]" 1 MB was 11 tokens), cycle refused.
    const a = isRecord(f) && (f.arguments ?? f.input ?? "")
    if (isRecord(f))
      parts.push(`${safeString(f.name ?? "")} ${typeof a === "string" ? a : jsonText(a, index)}`)
  }
  return parts.filter(Boolean).join(" ")
}

// Its text is endless, so no estimate is right: refused as MessageValidator refuses it.
const cycle = (index: number) =>
  new MessageValidationError(`Message ${index} ${CYCLE}.`, {
    violation: "invalid_message",
    messageIndex: index,
    advice: DROP_ADVICE,
  })

// With an explicit stack, not recursion: a tool_result nested in a tool_result 8,000 levels deep overflowed it.
// The arrays being read stay open, so content that holds itself is found instead of read forever.
function contentText(content: unknown, index: number): string {
  const out: string[] = []
  const open = new Set<unknown>()
  const todo: unknown[] = [asText(content, index)] // strings to write, arrays to read, and { done } to close them
  for (let t = todo.pop(); t !== undefined; t = todo.pop()) {
    if (typeof t === "string") out.push(t)
    else if (!Array.isArray(t)) open.delete((t as { done: unknown }).done)
    else if (open.has(t)) throw cycle(index)
    else {
      open.add(t)
      todo.push({ done: t })
      for (let i = t.length - 1; i >= 0; i--) todo.push(i in t ? blockText(t[i], index) : "", i ? " " : "")
    }
  }
  return out.join("")
}

// Content as the loop reads it: text, or an array of blocks. Content that is one object counts as its JSON (the
// original counted str(content)): Anthropic's web_fetch_tool_result and code_execution_tool_result hold the fetched
// page or the program's output there, and a 1 MB page counted as "[object Object]", 4 tokens.
const asText = (content: unknown, index: number): string | unknown[] =>
  content === undefined || content === null
    ? ""
    : typeof content === "string" || Array.isArray(content)
      ? content
      : isRecord(content)
        ? jsonText(content, index)
        : safeString(content)

function blockText(block: unknown, index: number): string | unknown[] {
  if (!isRecord(block)) return safeString(block)
  if (typeof block.text === "string" && block.text) return block.text
  if (block.content !== undefined && block.content !== null) return asText(block.content, index)
  // Text the model wrote or the provider bills as input though the app never reads it: an Anthropic thinking block
  // (kept in a tool-use loop; 400 KB counted nothing), a redacted one's data, a search result's encrypted page.
  const hidden =
    block.thinking ?? block.encrypted_content ?? (block.type === "redacted_thinking" && block.data)
  if (typeof hidden === "string") return hidden
  // Text the model reads: an Anthropic document's text or content source, an AI SDK text file's data (base64 or
  // plain). Left out, a 400 KB document counted 9 tokens.
  const src = block.source
  if (isRecord(src) && (src.type === "text" || src.type === "content"))
    return asText(src.data ?? src.content, index)
  if (typeof block.data === "string" && /^text\//.test(safeString(block.mediaType ?? block.mimeType)))
    return block.data
  const payload = block.input ?? block.args ?? block.output ?? block.result
  if (payload === undefined) return ""
  return typeof payload === "string" ? payload : jsonText(payload, index)
}

// An image, audio or file part has no text to count, but two different ones are different turns: its key is its
// JSON (url, file id, media type, data). Long strings and binary data are sampled, so a history of large images
// costs the same to check as a short one: the length, the first and last 256 items (headers, checksums) and
// about 1,000 evenly spaced ones between.
function mediaKey(block: Record<string, unknown>): string {
  const sample = (v: ArrayLike<unknown>): string => {
    const n = v.length
    const step = Math.ceil(n / 1024)
    let s = `${n}:`
    for (let i = 0; i < n; i += i < 256 || i > n - 256 - step ? 1 : step) s += `${v[i]},`
    return s
  }
  try {
    return JSON.stringify(block, function (this: Record<string, unknown>, key, value: unknown) {
      const raw = this[key] as Uint8Array // before toJSON, which spells out every byte of a Node Buffer
      return raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)
        ? sample(new Uint8Array(raw.buffer ?? raw, raw.byteOffset, raw.byteLength))
        : typeof value === "string"
          ? sample(value)
          : bigint(key, value) // else JSON throws, and two files differing only here were one turn
    })
  } catch {
    return "" // a cycle, or nesting too deep for JSON: keyed by nothing, as before
  }
}

// A BigInt as its digits (a JSON string): JSON refuses it, and the whole payload (a DB row with a bigint id and
// 100 KB of text) counted as "[object Object]".
const bigint = (_k: string, v: unknown) => (typeof v === "bigint" ? String(v) : v)

// JSON.stringify recurses: tool input a model nested 5,000 levels deep throws a RangeError out of every
// HistoryGuard call. The same text, built with an explicit stack, so the estimate still counts every bracket.
function jsonText(value: unknown, index: number): string {
  try {
    return JSON.stringify(value, bigint) ?? ""
  } catch (error) {
    // A cycle is read below, to be refused as in content; anything else JSON refuses is kept as before.
    if (!(error instanceof RangeError) && !hasCycle(value)) return safeString(value)
  }
  const out: string[] = []
  const open = new Set<unknown>()
  const todo: ({ text: string; done?: object } | { value: unknown })[] = [{ value }]
  for (let task = todo.pop(); task; task = todo.pop()) {
    if ("text" in task) {
      out.push(task.text)
      open.delete(task.done)
      continue
    }
    const v = task.value
    if (typeof v !== "object" || v === null) {
      out.push(JSON.stringify(v, bigint) ?? "null")
      continue
    }
    if (open.has(v)) throw cycle(index)
    open.add(v)
    const array = Array.isArray(v)
    const entries = Object.entries(v)
    todo.push({ text: array ? "]" : "}", done: v })
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, item] = entries[i] as [string, unknown]
      todo.push({ value: item })
      if (!array) todo.push({ text: `${JSON.stringify(k)}:` })
      if (i > 0) todo.push({ text: "," })
    }
    todo.push({ text: array ? "[" : "{" })
  }
  return out.join("")
}

export function messageRole(message: unknown): string {
  if (!isRecord(message)) return "unknown"
  const role = message.role ?? message.type
  return typeof role === "string" ? role : "unknown"
}

/** The original's heuristic: 3 + Σ (4 + max(1, ⌊len/4⌋)). */
export const heuristicTokens = (text: string): number => Math.max(1, Math.floor(text.length / 4))

// FNV-1a over the full text: the original hashed only the first 200 characters, so long messages with a
// shared prefix counted as duplicates.
export function fingerprint(message: unknown, index = 0): string {
  const ids = isRecord(message)
    ? [
        message.tool_call_id,
        ...(Array.isArray(message.tool_calls)
          ? message.tool_calls.map((c) => (isRecord(c) ? c.id : ""))
          : []),
      ]
    : []
  const s = `${messageRole(message)}\u0000${messageText(message, index)}\u0000${ids.map((id) => (id === undefined || id === null ? "" : safeString(id))).join(",")}\u0000${idsInContent(message, index)}`
  let h1 = 0x811c9dc5
  let h2 = 0x01000193
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 0x01000193)
    h2 = Math.imul(h2 ^ c, 0x5bd1e995)
  }
  return `${(h1 >>> 0).toString(16)}${(h2 >>> 0).toString(16)}:${s.length}`
}

function idsInContent(message: unknown, index: number): string {
  if (!isRecord(message) || !Array.isArray(message.content)) return ""
  return message.content
    .map((b) =>
      isRecord(b)
        ? safeString(b.id ?? b.tool_use_id ?? b.toolCallId ?? (contentText([b], index) ? "" : mediaKey(b)))
        : "",
    )
    .join(",")
}
