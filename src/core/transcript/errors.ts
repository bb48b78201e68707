import { MyceliumError } from "../errors.ts"
import type { Violation } from "./types.ts"

/** Where a `MessageValidationError` points: the violation, the message, and the tool call when there is one. */
export interface MessageValidationErrorInit {
  violation: Violation
  messageIndex: number
  toolCallId?: string | undefined
  callIndex?: number | undefined
  /** What to do next, appended to the reason (which says it itself when this is left out). */
  advice?: string | undefined
}

/** For a message repair() cannot fix: a non-object, an unknown role, a cycle. */
export const DROP_ADVICE =
  'Fix the message, or drop it with MessageValidator.repair() and { invalidMessages: "drop" }.'

/** A transcript would be rejected by the model provider. `messageIndex` points at the offending message. */
export class MessageValidationError extends MyceliumError {
  override readonly name = "MessageValidationError"
  override readonly code = "message_validation"
  readonly violation: Violation
  readonly messageIndex: number
  readonly reason: string
  /** The tool call concerned, when there is one. */
  readonly toolCallId: string | undefined
  /** For `invalid_tool_arguments`: the call's position among the message's tool calls. */
  readonly callIndex: number | undefined

  constructor(reason: string, options: MessageValidationErrorInit) {
    // The advice depends on the caller: validate() suggests repair(), but repair()'s own refusal suggesting
    // repair() sent the caller round in a circle.
    super(options.advice ? `${reason} ${options.advice}` : reason)
    this.reason = reason
    this.violation = options.violation
    this.messageIndex = options.messageIndex
    this.toolCallId = options.toolCallId
    this.callIndex = options.callIndex
  }
}
