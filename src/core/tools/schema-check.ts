import { boundaryError } from "./errors.ts"
import { inputHint, inputViolation, outputHint } from "./hints.ts"
import type { StandardSchemaIssue, StandardSchemaV1 } from "./standard-schema.ts"

// Zod issues carry a `code` (and `expected`, `format`) beyond the Standard Schema minimum; use them when
// present so zod failures get the same violation names as field specs.
interface RichIssue extends StandardSchemaIssue {
  code?: string
  expected?: string
  format?: string
  pattern?: string
}

/** Validates through Standard Schema and maps the first issue to a ToolBoundaryError. */
export async function validateSchema(
  schema: StandardSchemaV1,
  value: unknown,
  stage: "input" | "output",
  tool: string,
): Promise<unknown> {
  const result = await schema["~standard"].validate(value)
  if (!result.issues) return result.value
  const issue = (result.issues[0] ?? { message: "invalid value" }) as RichIssue
  const path = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p))
  const field = path.length > 0 ? path.join(".") : undefined
  // Zod reads a left-out `constructor` or `toString` through the prototype ("received function"): such a field is
  // missing, not a function. A class instance's getters under other names are still read.
  const actual = path.reduce<unknown>(
    (v, k) =>
      typeof v === "object" && v !== null && (Object.hasOwn(v, k) || !(k in Object.prototype))
        ? (v as Record<string, unknown>)[k]
        : undefined,
    value,
  )
  const type = issueType(issue, actual, field !== undefined)
  const expected =
    type === "missing"
      ? "a value for this field"
      : type === "string_pattern_mismatch"
        ? `string matching pattern '${issue.pattern ?? ""}'`
        : (issue.expected ?? issue.message)
  throw boundaryError({
    violation: stage === "input" ? inputViolation(type) : "output_validation_failed",
    toolName: tool,
    stage,
    ...(field !== undefined ? { field } : {}),
    expected,
    actual,
    recoveryHint: stage === "input" ? inputHint(type, field ?? "the arguments", tool) : outputHint(tool),
  })
}

function issueType(issue: RichIssue, actual: unknown, hasField: boolean): string {
  if (hasField && actual === undefined) return "missing"
  if (issue.code === "invalid_type" && issue.expected === "string") return "string_type"
  if (issue.code === "invalid_format" && issue.format === "regex") return "string_pattern_mismatch"
  return issue.code ?? "invalid_value"
}
