// Python's json writes NaN, Infinity and -Infinity as bare tokens, which are not JSON: a row or receipt the original
// wrote holding float("nan") is refused by JSON.parse and read by json.loads. Runtime-neutral (Web Crypto only).

/** A JSON string literal, escapes included, as regular-expression source. */
export const JSON_STRING = '"[^"\\\\]*(?:\\\\.[^"\\\\]*)*"'

/**
 * `json.loads` of text holding bare NaN, Infinity or -Infinity: each becomes a tagged string, then that number. The
 * tag is random, so no stored string can pass for one. Only after JSON.parse failed: it costs a scan and a reviver.
 */
function parseBareTokens(text: string): unknown {
  const tag = crypto.randomUUID()
  return JSON.parse(
    text.replace(new RegExp(`${JSON_STRING}|-?(?:NaN|Infinity)`, "g"), (t) =>
      t[0] === '"' ? t : `"${tag}${t}"`,
    ),
    (_key, v: unknown) => (typeof v === "string" && v.startsWith(tag) ? Number(v.slice(tag.length)) : v),
  )
}

/**
 * JSON.parse, or when that fails, the same text as json.loads reads it (bare NaN and Infinity). Throws JSON.parse's
 * own error when the text is not that either.
 */
export function parsePythonRow(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (e) {
    try {
      return parseBareTokens(text)
    } catch {
      throw e
    }
  }
}
