import { MyceliumError } from "../errors.ts"

/** Why a history was rejected. */
export type HistoryReason =
  | "token_limit"
  | "message_count"
  | "duplicate_turns"
  | "dropped_messages"
  | "cannot_fit"

/** What a `HistoryTruncatedError` reports: why, and the history's size when it was checked. */
export interface HistoryTruncatedErrorInit {
  reason: HistoryReason
  messageCount: number
  estimatedTokens: number
}

/** The indices of the repeated turns, with the history's size. */
export interface HistoryDuplicateTurnsErrorInit extends Omit<HistoryTruncatedErrorInit, "reason"> {
  indices: number[]
}

/** How many messages went missing, with the history's size. */
export interface HistoryDropErrorInit extends Omit<HistoryTruncatedErrorInit, "reason"> {
  dropped: number
}

/** The history is too long or corrupted (the original's single error type; subclasses refine it). */
export class HistoryTruncatedError extends MyceliumError {
  override name = "HistoryTruncatedError"
  override readonly code: string = "history_truncated"
  readonly reason: HistoryReason
  readonly messageCount: number
  readonly estimatedTokens: number

  constructor(message: string, init: HistoryTruncatedErrorInit) {
    super(message)
    this.reason = init.reason
    this.messageCount = init.messageCount
    this.estimatedTokens = init.estimatedTokens
  }
}

/** Identical turns repeated back to back (a framework replayed or double-appended a message). */
export class HistoryDuplicateTurnsError extends HistoryTruncatedError {
  override name = "HistoryDuplicateTurnsError"
  override readonly code = "history_duplicate_turns"
  readonly indices: number[]

  constructor(message: string, init: HistoryDuplicateTurnsErrorInit) {
    super(message, { ...init, reason: "duplicate_turns" })
    this.indices = init.indices
  }
}

/** Messages seen by the previous check are gone, and nobody trimmed them through the guard. */
export class HistoryDropError extends HistoryTruncatedError {
  override name = "HistoryDropError"
  override readonly code = "history_dropped"
  readonly dropped: number

  constructor(message: string, init: HistoryDropErrorInit) {
    super(message, { ...init, reason: "dropped_messages" })
    this.dropped = init.dropped
  }
}
