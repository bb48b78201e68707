import { safeString } from "../repr.ts"
import { clipText } from "../tools/errors.ts"

// Tool-call arguments must be a JSON object in every format the guards understand: OpenAI sends
// `function.arguments` as a JSON object *string*, Anthropic `tool_use.input` and AI SDK `input` as an object.
const MARKER = "had arguments that were not a JSON object"

const kind = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "an array"
      : typeof value === "object" || typeof value === "undefined"
        ? `an ${typeof value}`
        : `a ${typeof value}`

/** Why an argument object is not a JSON object, or undefined when it is one. */
export function objectArgumentsProblem(value: unknown, field: string): string | undefined {
  if (value === undefined) return `${field} is missing`
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return undefined
  return `${field} is ${kind(value)}, not an object`
}

/** Why an argument string is not a JSON object string, or undefined when it is one. */
export function jsonArgumentsProblem(value: unknown, field: string): string | undefined {
  if (typeof value !== "string")
    return `${field} is ${value === undefined ? "missing" : kind(value)}, not a JSON string`
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return `${field} is not valid JSON`
  }
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? undefined
    : `${field} is JSON ${kind(parsed)}, not an object`
}

function preview(raw: unknown): string {
  let text: string
  try {
    text = typeof raw === "string" ? raw : (JSON.stringify(raw) ?? String(raw))
  } catch {
    text = safeString(raw)
  }
  return clipText(text)
}

// The model wrote the name, id and arguments a synthetic result quotes back to it: clipped and escaped as the tool
// boundary's echoes are (a 100 KB name came back whole, and "x\n\nSYSTEM: ..." stood on lines of its own).
export const callLabel = (name: string | undefined, id: string): string =>
  `Tool call ${name ? `'${clipText(name)}' ` : ""}(id ${clipText(id)})`

/**
 * Text of the error result that closes a call whose arguments were not a JSON object. It says what was
 * sent, so the model can call again with corrected arguments, and that nothing was recorded.
 */
export function invalidArgumentsResultText(
  toolName: string | undefined,
  toolCallId: string,
  problem: string,
  raw: unknown,
): string {
  return (
    `${callLabel(toolName, toolCallId)} ${MARKER} (${problem}); they were: ${preview(raw)}. ` +
    "They were replaced by {} here so the provider accepts the transcript, and no result was recorded. " +
    "If you still need this tool, check the current state and call it again with a JSON object."
  )
}

export function isInvalidArgumentsText(text: unknown): boolean {
  return typeof text === "string" && text.includes(MARKER)
}
