// The text rules of the ledger API, in one place: the server refuses a body that breaks them (body.ts), and the
// client (client.ts) checks a result before sending it, so that it never sends what the server would refuse and
// leave the row IN_FLIGHT for a redispatch to run again.

// NUL and unpaired surrogates: valid JSON escapes, but not text every store can hold (Postgres refuses both, and a
// refused write would answer 503 as if the store were down). Refused for every store, so the API is the same on all.
const BAD = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** Whether `s` holds text no store can be trusted with. */
export const isUnstorableText = (s: string): boolean => s.search(BAD) >= 0

const BAD_TEXT = "text holds U+0000 or an unpaired surrogate; send valid Unicode"

/** The first string or key of `value` (already depth-checked) that no store keeps as sent: where, and why. */
export function unstorableAt(value: unknown, path: string): string | null {
  const at: string[] = []
  const why = find(value, at)
  // Joined as the walk used to join it: an empty key stays a segment ("a." names the key "" of a).
  return why && `${at.reverse().reduce((p, k) => (p ? `${p}.${k}` : k), path) || "body"}: ${why}`
}

// The path is built only for the one bad value, on the way out: building it for every element made a refused
// 1 MiB body of `[0,0,…]` cost seconds of the server's CPU.
function find(value: unknown, at: string[]): string | null {
  if (typeof value === "string") return isUnstorableText(value) ? BAD_TEXT : null
  if (typeof value !== "object" || value === null) return null
  const list = Array.isArray(value)
  for (const k of list ? value.keys() : Object.keys(value)) {
    if (!list) {
      if (isUnstorableText(k as string)) return `a key ${BAD_TEXT}`
      // Rebuilding an object (validation, spreads) drops a `__proto__` key: args {"__proto__": x} would be args {}.
      if (k === "__proto__") return `a "__proto__" key cannot be stored; rename it`
    }
    const why = find((value as Record<string | number, unknown>)[k], at)
    if (why) {
      at.push(String(k))
      return why
    }
  }
  return null
}

/**
 * `s` as text the API accepts: at most `max` UTF-16 units, cut between code points (never inside an emoji's
 * surrogate pair), NUL and unpaired surrogates replaced by U+FFFD.
 */
export const storableText = (s: string, max: number): string =>
  s.slice(0, max - +(s.length > max && /[\ud800-\udbff]/.test(s[max - 1] as string))).replace(BAD, "\ufffd")
