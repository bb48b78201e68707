// What a store can hold. A result over these limits would make the completion write fail after the effect ran and
// strand the row IN_FLIGHT; the ledger checks before writing and records a terminal row that names the limit.
import { entryToRow, type LedgerEntry } from "./entry.ts"
import { LedgerResultUnstorableError } from "./errors.ts"

/** Limits a backend declares (`LedgerStorage.limits`). Omitted fields are unlimited. */
export interface StorageLimits {
  /** Largest stored row, in UTF-8 bytes of its JSON payload. */
  readonly maxRowBytes?: number
  /** Deepest nesting of arrays and objects inside a stored row. */
  readonly maxDepth?: number
}

/** Which limit a value broke. */
export type UnstorableReason = "not_serializable" | "max_depth" | "max_row_bytes"

/** Marks a COMPLETED row whose result could not be stored: `error` starts with this, `result` is null. */
const MARKER = "LedgerResultUnstorableError: "

/** Nesting depth of a JSON-like value, iteratively (a recursive walk would overflow on hostile input). */
export function jsonDepth(value: unknown, stopAfter = Number.POSITIVE_INFINITY): number {
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

const encoder = new TextEncoder()

/**
 * Null when `row` fits the limits, else why not. `row` is the completed row as it would be written; serializing
 * it also proves the result is JSON (a cycle throws here, not inside the store).
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
    text = JSON.stringify(entryToRow(row))
  } catch (e) {
    return {
      reason: "not_serializable",
      message: `the result is not JSON-serializable (${e instanceof Error ? e.message : String(e)})`,
    }
  }
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

/** The terminal row recorded instead: COMPLETED (the effect ran), no result, an error naming the limit. */
export function unstorableRow(
  completed: LedgerEntry,
  reason: UnstorableReason,
  message: string,
): LedgerEntry {
  return { ...completed, result: null, error: `${MARKER}[${reason}] ${message}` }
}

/** A replay of a row recorded by `unstorableRow` raises instead of returning a null result. */
export function throwIfUnstorable(row: LedgerEntry): void {
  if (row.terminalOutcome !== "COMPLETED" || !row.error?.startsWith(MARKER)) return
  const m = /^\[(\w+)\] /.exec(row.error.slice(MARKER.length))
  const reason = (m?.[1] ?? "not_serializable") as UnstorableReason
  throw new LedgerResultUnstorableError(
    `request '${row.requestId}' completed, but its result could not be stored (${row.error.slice(MARKER.length)}); ` +
      "the effect ran once and will not run again. Return a smaller result (e.g. an id to fetch the rest) from the tool.",
    reason,
  )
}
