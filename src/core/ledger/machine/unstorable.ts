// A COMPLETED row whose result could not be stored, and its replay: a module of its own, so the integrations' retry
// memory can refuse such a replay without the transition machine's module-level state.
import { clip } from "../../repr.ts"
import { LedgerResultUnstorableError, type UnstorableReason } from "../errors.ts"
import type { LedgerEntry } from "../model/entry.ts"

/** Marks a COMPLETED row whose result could not be stored: `error` starts with this, `result` is null. */
export const UNSTORABLE_MARKER = "LedgerResultUnstorableError: "

/** A replay of a row written by `unstorableRow` raises instead of returning a null result. */
export function throwIfUnstorable(row: LedgerEntry): void {
  if (row.terminalOutcome !== "COMPLETED" || !row.error?.startsWith(UNSTORABLE_MARKER)) return
  const detail = row.error.slice(UNSTORABLE_MARKER.length)
  // Only our marker has the bracketed limit: a settled row keeps its failure's text, which may name this error.
  const m = /^\[(\w+)\] /.exec(detail)
  if (!m) return
  const reason = m[1] as UnstorableReason
  throw new LedgerResultUnstorableError(
    `request '${clip(row.requestId)}' completed but its result was not stored (${detail}); it will not run again. ` +
      "Return less from the tool (e.g. an id to fetch the rest).",
    reason,
  )
}
