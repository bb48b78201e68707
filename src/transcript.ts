// `mycelium-runtime/transcript`. Transcript guards: message validation and repair, history trimming.
// Its own entry so the core entry stays small (README.md, the entry-point table); the public names only, listed by hand.

export {
  detectFormat,
  HistoryDropError,
  type HistoryDropErrorInit,
  HistoryDuplicateTurnsError,
  type HistoryDuplicateTurnsErrorInit,
  type HistoryEvent,
  HistoryGuard,
  type HistoryGuardOptions,
  type HistoryReason,
  HistoryTruncatedError,
  type HistoryTruncatedErrorInit,
  interruptedResultText,
  type Message,
  MessageValidationError,
  type MessageValidationErrorInit,
  MessageValidator,
  type MessageValidatorOptions,
  type RepairAction,
  type RepairReport,
  type RepairResult,
  type TranscriptFormat,
  type TranscriptIssue,
  type Violation,
} from "./core/transcript/index.ts"
