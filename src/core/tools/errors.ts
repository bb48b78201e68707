import { MyceliumError } from "../errors.ts"
import { pyRepr } from "../repr.ts"

/** Where a boundary check failed; the runner retries `output` failures at tool level. */
export type BoundaryStage = "input" | "output" | "scope" | "allowlist"

/** Fields of a {@link ToolBoundaryError}. */
export interface ToolBoundaryErrorInit {
  violation: string
  toolName: string
  stage: BoundaryStage
  llmMessage: string
  field?: string
  expected?: string
  actual?: unknown
  recoveryHint?: string
}

/**
 * A tool call was blocked at its boundary (bad arguments, bad output, out of scope, not allowed).
 * `llmMessage` is written for the model: feed it back as the tool result so the model can correct itself.
 */
export class ToolBoundaryError extends MyceliumError {
  override name = "ToolBoundaryError"
  override readonly code: string = "tool_boundary"
  readonly violation: string
  readonly toolName: string
  readonly stage: BoundaryStage
  readonly llmMessage: string
  readonly field: string | undefined
  readonly expected: string | undefined
  readonly actual: unknown
  readonly recoveryHint: string | undefined

  constructor(message: string, init: ToolBoundaryErrorInit) {
    super(message)
    this.violation = init.violation
    this.toolName = init.toolName
    this.stage = init.stage
    this.llmMessage = init.llmMessage
    this.field = init.field
    this.expected = init.expected
    this.actual = init.actual
    this.recoveryHint = init.recoveryHint
  }
}

const HEADLINES: Record<Exclude<BoundaryStage, "allowlist">, string> = {
  input: "failed input validation.",
  output: "returned invalid output.",
  scope: "failed scope validation.",
}

/** Builds a ToolBoundaryError whose message and `llmMessage` follow the original's templates. */
export function boundaryError(init: Omit<ToolBoundaryErrorInit, "llmMessage">): ToolBoundaryError {
  const parts: string[] = []
  if (init.stage !== "allowlist") parts.push(`Tool '${init.toolName}' ${HEADLINES[init.stage]}`)
  if (init.field !== undefined) parts.push(`Field: ${init.field}.`)
  if ("actual" in init)
    parts.push(`Received: ${init.actual === undefined ? "nothing" : pyRepr(init.actual)}.`)
  if (init.expected !== undefined) parts.push(`Expected: ${init.expected}.`)
  if (init.recoveryHint) parts.push(init.recoveryHint)
  const message = `${init.toolName}: ${init.violation}${init.field !== undefined ? ` on ${init.field}` : ""}`
  return new ToolBoundaryError(message, { ...init, llmMessage: parts.join(" ") })
}

/** A tool kept failing its boundary after every retry the runner was allowed. */
export class ToolBoundaryExhaustedError extends MyceliumError {
  override readonly name = "ToolBoundaryExhaustedError"
  override readonly code = "tool_boundary_exhausted"
  readonly lastError: ToolBoundaryError
  /** The transcript at the point of giving up, including the error turns. */
  readonly messages: readonly unknown[]

  constructor(message: string, options: { lastError: ToolBoundaryError; messages?: readonly unknown[] }) {
    super(message, { cause: options.lastError })
    this.lastError = options.lastError
    this.messages = options.messages ?? []
  }
}

/** A field spec or bounded() option is malformed; raised when the tool is wrapped, never per call. */
export class SchemaBuildError extends MyceliumError {
  override readonly name = "SchemaBuildError"
  override readonly code = "schema_build"
}

/** The runner was asked to run a tool it has no implementation for. */
export class ToolRunnerConfigError extends MyceliumError {
  override readonly name = "ToolRunnerConfigError"
  override readonly code = "tool_runner_config"
}

/** An OpenAI chat `tool` message carrying a boundary error back to the model. */
export interface ToolErrorMessage {
  role: "tool"
  tool_call_id: string
  content: string
}

/** The original's `tool_error_message`: the tool-role message to append after a blocked call. */
export function toolErrorMessage(toolCallId: string, llmMessage: string): ToolErrorMessage {
  return { role: "tool", tool_call_id: toolCallId, content: llmMessage }
}
