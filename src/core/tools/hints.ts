/** The original's mapping of pydantic error types to violation names. */
export function inputViolation(type: string): string {
  if (type === "missing") return "missing_required_field"
  if (type === "string_type") return "type_mismatch"
  if (type === "string_pattern_mismatch") return "pattern_mismatch"
  return type
}

export function inputHint(violation: string, field: string, tool: string): string {
  if (violation === "missing" || violation === "missing_required_field")
    return `Provide ${field} when calling ${tool}.`
  if (violation === "string_type" || violation === "type_mismatch") return `Provide ${field} as a string.`
  if (violation === "string_pattern_mismatch" || violation === "pattern_mismatch") {
    return `Provide ${field} in the required format.`
  }
  return `Fix the value of ${field} and call ${tool} again.`
}

// The original told the model to "provide" a field of the tool's own output; the model cannot fix that.
export function outputHint(tool: string): string {
  return `This is a fault in ${tool}'s result, not in your arguments; call ${tool} again or use another tool.`
}
