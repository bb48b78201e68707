import { safeString } from "../repr.ts"
import { isRecord } from "./clone.ts"

// The original counted only `content`; tool-call arguments and structured results (AI SDK `input` /
// `output`, OpenAI `function.arguments`) are often the bulk of a transcript, so they count here too.
export function messageText(message: unknown): string {
  if (typeof message === "string") return message
  if (!isRecord(message)) return safeString(message)
  const parts = [contentText(message.content)]
  if (Array.isArray(message.tool_calls)) {
    for (const c of message.tool_calls) {
      // OpenAI custom tool calls carry { name, input } (free text) instead of function.arguments.
      const f = isRecord(c) && (c.function ?? c.custom)
      if (isRecord(f)) parts.push(`${safeString(f.name ?? "")} ${safeString(f.arguments ?? f.input ?? "")}`)
    }
  }
  return parts.filter(Boolean).join(" ")
}

function contentText(content: unknown): string {
  if (content === undefined || content === null) return ""
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return safeString(content)
  return content.map(blockText).join(" ")
}

function blockText(block: unknown): string {
  if (!isRecord(block)) return safeString(block)
  if (typeof block.text === "string" && block.text) return block.text
  if (block.content !== undefined && block.content !== null) return contentText(block.content)
  const payload = block.input ?? block.args ?? block.output ?? block.result
  if (payload === undefined) return ""
  return typeof payload === "string" ? payload : jsonText(payload)
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
          : value
    })
  } catch {
    return "" // a cycle, or nesting too deep for JSON: keyed by nothing, as before
  }
}

// JSON.stringify recurses: tool input a model nested 5,000 levels deep throws a RangeError out of every
// HistoryGuard call. The same text, built with an explicit stack, so the estimate still counts every bracket.
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? ""
  } catch (error) {
    if (!(error instanceof RangeError)) return safeString(value)
  }
  const out: string[] = []
  const todo: ({ text: string } | { value: unknown })[] = [{ value }]
  for (let task = todo.pop(); task; task = todo.pop()) {
    if ("text" in task) {
      out.push(task.text)
      continue
    }
    const v = task.value
    if (typeof v !== "object" || v === null) {
      out.push(typeof v === "bigint" ? String(v) : (JSON.stringify(v) ?? "null"))
      continue
    }
    const array = Array.isArray(v)
    const entries = Object.entries(v)
    todo.push({ text: array ? "]" : "}" })
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
export function fingerprint(message: unknown): string {
  const ids = isRecord(message)
    ? [
        message.tool_call_id,
        ...(Array.isArray(message.tool_calls)
          ? message.tool_calls.map((c) => (isRecord(c) ? c.id : ""))
          : []),
      ]
    : []
  const s = `${messageRole(message)}\u0000${messageText(message)}\u0000${ids.map((id) => (id === undefined || id === null ? "" : safeString(id))).join(",")}\u0000${idsInContent(message)}`
  let h1 = 0x811c9dc5
  let h2 = 0x01000193
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 0x01000193)
    h2 = Math.imul(h2 ^ c, 0x5bd1e995)
  }
  return `${(h1 >>> 0).toString(16)}${(h2 >>> 0).toString(16)}:${s.length}`
}

function idsInContent(message: unknown): string {
  if (!isRecord(message) || !Array.isArray(message.content)) return ""
  return message.content
    .map((b) =>
      isRecord(b)
        ? safeString(b.id ?? b.tool_use_id ?? b.toolCallId ?? (blockText(b) ? "" : mediaKey(b)))
        : "",
    )
    .join(",")
}
