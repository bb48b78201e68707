// Where a body holds what no store keeps as sent (text that breaks core/storage/text.ts, a number JSON.parse reads as
// Infinity): the server refuses such a body (body.ts), and the client (client.ts) checks a result before sending it,
// so that it never sends what the server would refuse and leave the row IN_FLIGHT for a redispatch to run again.

import { isUnstorableText } from "../core/storage/text.ts"

const BAD_TEXT = "text holds U+0000 or an unpaired surrogate; send valid Unicode"
// Stored, it became the string "Infinity": a replay answered another type than the call returned, and signed it.
const NOT_FINITE = "a number out of range (1e400): send it as a string"

/**
 * Why a completion's `result` cannot be stored, beyond `unstorableAt`: an own top-level `operator_release` member.
 * Only an operator's release writes one into a receipt's outputs (core/ledger/machine/receipts.ts); an agent's
 * result holding it was signed as a release, `resolved_by` and all.
 */
export function forgedReleaseAt(result: unknown, path: string): string | null {
  return typeof result === "object" && result !== null && Object.hasOwn(result, "operator_release")
    ? `${path}: only a release writes "operator_release"`
    : null
}

/** The first string, key or number of `value` (already depth-checked) that no store keeps as sent: where, and why. */
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
  if (typeof value === "number") return Number.isFinite(value) ? null : NOT_FINITE
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
