import { MyceliumError } from "../errors.ts"
import type { Violation } from "./types.ts"

/** Where a `MessageValidationError` points: the violation, the message, and the tool call when there is one. */
export interface MessageValidationErrorInit {
  violation: Violation
  messageIndex: number
  toolCallId?: string | undefined
  callIndex?: number | undefined
}

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
    super(`${reason} Run MessageValidator.repair() to fix what can be fixed automatically.`)
    this.reason = reason
    this.violation = options.violation
    this.messageIndex = options.messageIndex
    this.toolCallId = options.toolCallId
    this.callIndex = options.callIndex
  }
}
