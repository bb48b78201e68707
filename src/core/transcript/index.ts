export { detectFormat } from "./detect.ts"
export { MessageValidationError, type MessageValidationErrorInit } from "./errors.ts"
export {
  HistoryDropError,
  type HistoryDropErrorInit,
  HistoryDuplicateTurnsError,
  type HistoryDuplicateTurnsErrorInit,
  type HistoryReason,
  HistoryTruncatedError,
  type HistoryTruncatedErrorInit,
} from "./history-errors.ts"
export { type HistoryEvent, HistoryGuard, type HistoryGuardOptions } from "./history-guard.ts"
export { interruptedResultText } from "./interrupted.ts"
export { MessageValidator, type MessageValidatorOptions, type RepairResult } from "./message-validator.ts"
export type {
  Message,
  RepairAction,
  RepairReport,
  TranscriptFormat,
  TranscriptIssue,
  Violation,
} from "./types.ts"
