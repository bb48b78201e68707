// What a store can hold, checked before a write. A result over the backend's limits would make the completion write
// fail after the effect ran and strand the row IN_FLIGHT; the ledger checks first and records a terminal row that
// names the limit instead (machine/transitions.ts `unstorableRow`).

import { LedgerConfigError, type UnstorableReason } from "../ledger/errors.ts"
import type { LedgerEntry } from "../ledger/model/entry.ts"
import { clip } from "../repr.ts"
import type { StorageLimits } from "./contract.ts"
import { jsonHoldsUnstorableText, keepableJson, MAX_ERROR_TEXT } from "./text.ts"

/** Nesting depth of a JSON-like value, iteratively (a recursive walk would overflow on hostile input). */
export function jsonDepth(value: unknown, stopAfter = Infinity): number {
  let max = 0
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number]
    if (v === null || typeof v !== "object") continue
    const depth = d + 1
    if (depth > max) {
      max = depth
      if (max > stopAfter) return max
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth])
    }
  }
  return max
}

const encoder = /* @__PURE__ */ new TextEncoder()

/** The result could not be serialized (a cycle, a BigInt): `e` is what JSON.stringify threw. */
export const notJson = (e: unknown): { reason: UnstorableReason; message: string } => ({
  reason: "not_serializable",
  message: `the result is not JSON (${e instanceof Error ? e.message : String(e)})`,
})

/**
 * Null when `row` fits the limits, else why not. `row` is the completed row as it would be written; serializing
 * it also proves the result is JSON (a cycle throws here, not inside the store). The entry is measured as it is,
 * not through the row codec (which the hot path does not load): the stored payload's snake_case keys add a few
 * hundred bytes at most, inside the margin backends declare.
 */
export function unstorableReason(
  row: LedgerEntry,
  limits: StorageLimits,
): { reason: UnstorableReason; message: string } | null {
  if (limits.maxDepth !== undefined) {
    // The row wraps the result one level deep.
    const depth = jsonDepth(row.result, limits.maxDepth) + 1
    if (depth > limits.maxDepth)
      return {
        reason: "max_depth",
        message: `the result nests deeper than the store's max_depth ${limits.maxDepth}`,
      }
  }
  let text: string
  try {
    text = JSON.stringify(row)
  } catch (e) {
    return notJson(e)
  }
  if (limits.validUnicodeOnly && jsonHoldsUnstorableText(text))
    return { reason: "not_serializable", message: "the result holds U+0000 or an unpaired surrogate" }
  if (limits.maxRowBytes !== undefined) {
    // Length is a lower bound on UTF-8 bytes: encode only when it could matter.
    const bytes = text.length * 3 <= limits.maxRowBytes ? text.length : encoder.encode(text).length
    if (bytes > limits.maxRowBytes)
      return {
        reason: "max_row_bytes",
        message: `the completed row is ${bytes} bytes, over the store's max_row_bytes ${limits.maxRowBytes}`,
      }
  }
  return null
}

/**
 * For a store's claim: refuses, with `LedgerConfigError` and nothing written, a new row its limits would refuse, or
 * one leaving no room for a failure's text (`MAX_ERROR_TEXT` units, 3 bytes each at most). Such a claim succeeded,
 * the body ran, and then the store refused the failure (or, nested past Lua's cjson depth, every write): the row
 * stayed IN_FLIGHT. A result is checked later, by `unstorableReason`.
 */
export function refuseUnkeepableClaim(entry: LedgerEntry, limits: StorageLimits): void {
  const text = JSON.stringify(entry)
  if (limits.validUnicodeOnly) keepableJson(text, entry.requestId)
  const { maxDepth: depth, maxRowBytes: bytes } = limits
  if (
    (depth !== undefined && jsonDepth(entry, depth) > depth) ||
    (bytes !== undefined && encoder.encode(text).length + 3 * MAX_ERROR_TEXT > bytes)
  )
    throw new LedgerConfigError(
      `request '${clip(entry.requestId)}': its arguments are too deep or too big for this store (max_depth ${depth}, ` +
        `max_row_bytes ${bytes} less room for an error); nothing was claimed`,
    )
}
