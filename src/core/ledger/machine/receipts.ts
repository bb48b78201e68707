// What an outcome's audit receipt says, as a pure function of the rows: the tool's own outcome, or an operator's
// release (the original's release receipt: status follows the verdict, outputs say who released what).
import type { LedgerEntry } from "../model/entry.ts"
import type { TerminalOutcome } from "../model/enums.ts"
import type { ReceiptDraft } from "../model/receipt-hook.ts"

/** The receipt of a COMPLETED or FAILED_* row; every field comes from the row (timestamp = finished_at). */
export function toolReceiptDraft(next: LedgerEntry): ReceiptDraft {
  const completed = next.status === "completed"
  return {
    action: next.tool,
    actionKind: "tool",
    requestId: next.requestId,
    args: next.args,
    kwargs: next.kwargs,
    outputs: completed ? next.result : null,
    status: completed ? "completed" : "failed",
    error: next.error,
    ...(next.finishedAt !== null ? { timestamp: next.finishedAt } : {}),
  }
}

/** The receipt of an operator release of `row` into `next` (see machine/transitions.ts `releasedRow`). */
export function releaseReceiptDraft(
  row: LedgerEntry,
  next: LedgerEntry,
  verified: "completed" | "not_executed",
  by: string,
  reason: string,
  releasedFrom: TerminalOutcome,
  now: number,
): ReceiptDraft {
  return {
    action: row.tool,
    actionKind: "tool",
    requestId: row.requestId,
    args: row.args,
    kwargs: row.kwargs,
    outputs: {
      operator_release: true,
      verified,
      resolved_by: by,
      resolution_reason: reason,
      released_from_outcome: releasedFrom,
      result: verified === "completed" ? next.result : null,
    },
    status: verified === "completed" ? "completed" : "failed",
    error: row.error,
    timestamp: now,
  }
}
