// Python's `repr()`, for messages the original wrote with it (hard-block and drift texts, the LLM-facing tool
// errors), so prompts and log searches tuned against the original keep matching.

/**
 * `repr()` of a value as the original's messages render it: strings exactly as Python quotes them, True/False,
 * dicts as {'k': v}. `null`/`undefined` render as `null` (the original's messages show JSON's null there).
 */
export function pyRepr(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return "null"
  if (typeof value === "string") return pyStrRepr(value)
  if (typeof value === "boolean") return value ? "True" : "False"
  if (typeof value === "number" || typeof value === "bigint") return String(value)
  if (depth > 4) return "..."
  if (Array.isArray(value)) return `[${value.map((v) => pyRepr(v, depth + 1)).join(", ")}]`
  if (typeof value === "object") {
    const parts = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${pyStrRepr(k)}: ${pyRepr(v, depth + 1)}`,
    )
    return `{${parts.join(", ")}}`
  }
  return String(value)
}

// What Python's str.isprintable() rejects: control, format, surrogate, private-use, unassigned and separator
// characters, except the plain space.
const NON_PRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu
const SHORT: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" }

export function escapeChar(ch: string): string {
  const short = SHORT[ch]
  if (short) return short
  const cp = ch.codePointAt(0) as number
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, "0")}`
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, "0")}`
  return `\\U${cp.toString(16).padStart(8, "0")}`
}

/** Python `repr()` of a string: single quotes unless the text holds one and no double quote; escapes as Python. */
export function pyStrRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'"
  let body = s.replace(/\\/g, "\\\\").replace(NON_PRINTABLE, escapeChar)
  if (q === "'") body = body.replace(/'/g, "\\'")
  return q + body + q
}

// What a message shows of a value the model wrote (a requestIdFrom key, a tool name or argument): a 1 MB argument
// must not come back whole in every error, log line and prompt. An error keeps the whole value where it has one.
export const SHOWN_CHARS = 300

/**
 * `text` cut to `SHOWN_CHARS` characters, with `...` when something was cut (maybe inside a pair: see escapeUnpaired).
 * A character at that index means a longer text; spelled so because the Upstash adapter's bundle carries it too.
 */
export const clip = (text: string): string => (text[SHOWN_CHARS] ? `${text.slice(0, SHOWN_CHARS)}...` : text)

/**
 * `String(value)` for a thrown value or abort reason, which may be anything: an object without a prototype or with
 * a throwing `toString` makes `String()` throw, and a throw while recording a failure would strand the caller.
 */
export function safeString(value: unknown): string {
  try {
    return String(value)
  } catch {
    try {
      return Object.prototype.toString.call(value)
    } catch {
      return "[unprintable value]"
    }
  }
}

// C0 controls (newlines included), DEL and C1 controls. Rows are written by agents: a tool name or request id
// holding ESC could retitle an operator's terminal, clear it, or move the cursor up to fake a "released" line.
// Format characters too (bidi controls such as U+202E, zero-width ones, U+FEFF, tag characters), and the line and
// paragraph separators: invisible, they reorder or hide what an operator reads (Trojan Source), so that `pay-A`
// and `pay-\u200bA` look alike.
// Not a joiner that is part of what is read, though: ZWJ inside an emoji sequence (👩‍💻, 🏳️‍🌈), and ZWJ or ZWNJ
// inside a word of a script that joins or conjoins its letters (Persian's می‌خواهم, Devanagari's क्‍ष), change the
// glyphs; escaped, an id copied from a listing named no row. Beside ASCII, doubled or beside a hidden one, escaped.
const CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  /(?!(?<=[\p{Extended_Pictographic}\p{Emoji_Modifier}]|\ufe0f)\u200d(?=\p{Extended_Pictographic})|(?<=[\p{sc=Arab}\p{sc=Syrc}\p{sc=Deva}\p{sc=Beng}\p{sc=Guru}\p{sc=Gujr}\p{sc=Orya}\p{sc=Taml}\p{sc=Telu}\p{sc=Knda}\p{sc=Mlym}\p{sc=Sinh}])[\u200c\u200d](?=[\p{sc=Arab}\p{sc=Syrc}\p{sc=Deva}\p{sc=Beng}\p{sc=Guru}\p{sc=Gujr}\p{sc=Orya}\p{sc=Taml}\p{sc=Telu}\p{sc=Knda}\p{sc=Mlym}\p{sc=Sinh}]))[\u0000-\u001f\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu

/**
 * Text from a row or an error, made inert for a terminal or a one-line log: every control character as `\xNN`,
 * every invisible format character and line separator as `\uXXXX` (`\UXXXXXXXX` above U+FFFF).
 */
export function clean(text: unknown): string {
  return String(text).replace(CONTROL, (c) =>
    c < "\u00a0" ? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}` : escapeChar(c),
  )
}
