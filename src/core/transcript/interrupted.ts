import { callLabel, isInvalidArgumentsText } from "./invalid-arguments.ts"

// The synthetic result must not claim the call failed or succeeded: the side effect may have happened.
const MARKER = "was interrupted before its result was recorded"

/** Text of the result inserted for a tool call that has none. */
export function interruptedResultText(toolName: string | undefined, toolCallId: string): string {
  return (
    `${callLabel(toolName, toolCallId)} ${MARKER}. Its outcome is unknown: ` +
    "do not assume it succeeded or failed; check the current state before calling it again."
  )
}

export function isInterruptedText(text: unknown): boolean {
  return typeof text === "string" && text.includes(MARKER)
}

/** Text of a result this library inserted (an interrupted call or one closed for invalid arguments). */
export function isSyntheticResultText(text: unknown): boolean {
  return isInterruptedText(text) || isInvalidArgumentsText(text)
}
