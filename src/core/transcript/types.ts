/** Transcript formats the guards understand. */
export type TranscriptFormat = "openai" | "anthropic" | "ai-sdk"

/** Violation names; the first six are the original's. */
export type Violation =
  | "invalid_role"
  | "duplicate_tool_call_blocks"
  | "duplicate_tool_call_ids"
  | "nonzero_tool_call_index"
  | "missing_tool_call_id"
  | "parsed_artifact"
  | "orphaned_tool_result"
  | "misplaced_tool_result"
  | "duplicate_tool_result"
  | "missing_tool_result"
  | "empty_tool_calls"
  | "invalid_tool_call"
  | "blank_tool_call_id"
  | "invalid_message"
  | "invalid_tool_arguments"
  | "empty_message"

/** One problem found in a transcript. */
export interface TranscriptIssue {
  violation: Violation
  messageIndex: number
  toolCallId?: string
  /** For `invalid_tool_arguments`: the 0-based position of the call among the message's tool calls. */
  callIndex?: number
  reason: string
}

/** What `repair()` changed. `messageIndex` refers to the input transcript. */
export interface RepairAction {
  kind:
    | "dropped_invalid_message"
    | "removed_parsed_artifact"
    | "dropped_duplicate_call_blocks"
    | "reindexed_tool_calls"
    | "removed_empty_tool_calls"
    | "dropped_invalid_tool_call"
    | "removed_blank_tool_call_id"
    | "assigned_missing_call_id"
    | "renamed_duplicate_call_id"
    | "dropped_orphan_result"
    | "dropped_duplicate_result"
    | "moved_tool_result"
    | "inserted_interrupted_result"
    | "replaced_invalid_arguments"
    | "inserted_invalid_arguments_result"
    | "dropped_empty_message"
  messageIndex: number
  toolCallId?: string
  detail?: string
}

export interface RepairReport {
  format: TranscriptFormat
  changed: boolean
  actions: RepairAction[]
}

export type Message = Record<string, unknown>
