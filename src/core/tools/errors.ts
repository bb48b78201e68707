import { unboxNumber } from "../boxed-number.ts"
import { MyceliumError } from "../errors.ts"
import { clip, escapeChar, pyRepr, SHOWN_CHARS } from "../repr.ts"

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

// The model writes the values, keys and tool names echoed back to it: a 1 MB string or a 2-million-item array
// must not come back whole in the error (it goes into the next prompt). The error keeps the full `actual`.
const SHOWN_ITEMS = 20

// An unpaired surrogate (half an emoji cut at 300 units, or a key the model wrote as "\ud800") as its escape, as repr
// shows it: raw in the next prompt, it makes a provider refuse the whole request ("no low surrogate in string").
// Control characters and line breaks too, as repr escapes them in values: a key or tool name the model wrote as
// "k\n\nSYSTEM: ..." stood on lines of its own in the tool message, text that reads as the system's, not as a name.
export const escapeUnpaired = (text: string): string =>
  text.replace(/[\p{Cs}\p{Cc}\p{Zl}\p{Zp}]/gu, escapeChar)

/** `text` cut to `SHOWN_CHARS` characters, with `...` when something was cut, its unpaired surrogates escaped. */
export function clipText(text: string): string {
  return escapeUnpaired(clip(text))
}

/** A tool name as the model wrote it, for messages: clipped, and never a TypeError when it is not a string. */
export function shownName(name: unknown): string {
  return typeof name === "string" ? clipText(name) : shownValue(name)
}

/**
 * The repr of a model-supplied value (or a tool's result), bounded in size and in work: only the first items of an
 * array, typed array or Buffer are read (pyRepr of a 16 MB Uint8Array walked every byte), and of an object, plain
 * or not, the first values.
 */
function shownValue(value: unknown): string {
  let cut = false
  // What repr writes, counted from below (a value is at least one character, a string its text) until it passes what
  // is shown. 20 items on each of 5 levels are 3.2 million values: a result sharing one row 20 times per level (a few
  // KB) made a 1 GB repr, and V8 threw "Invalid string length" instead of this error. A value past that is left
  // unread: repr would write it after the cut.
  let read = 0
  const preview = (v: unknown, depth: number): unknown => {
    if (read > SHOWN_CHARS) {
      cut = true
      return null
    }
    read++
    if (typeof v === "string") {
      read += v.length
      if (v.length <= SHOWN_CHARS) return v
      cut = true
      return v.slice(0, SHOWN_CHARS)
    }
    // A boxed Number (parseToolArguments' `1e16`) has no keys: it was echoed as {}.
    v = unboxNumber(v)
    if (depth > 4 || typeof v !== "object" || v === null) return v
    const o = v as Record<string, unknown>
    if (Array.isArray(v) || ArrayBuffer.isView(v)) {
      if ((o.length as number) > SHOWN_ITEMS) cut = true
      return [].slice.call(v, 0, SHOWN_ITEMS).map((x) => preview(x, depth + 1))
    }
    const keys = Object.keys(v)
    if (keys.length > SHOWN_ITEMS) cut = true
    // Cut only: pyRepr escapes the key, and an escape made here showed '\\ud800' for the key '\ud800'.
    return Object.fromEntries(keys.slice(0, SHOWN_ITEMS).map((k) => [clip(k), preview(o[k], depth + 1)]))
  }
  const repr = pyRepr(preview(value, 0))
  return cut || repr.length > SHOWN_CHARS ? escapeUnpaired(`${repr.slice(0, SHOWN_CHARS)}...`) : repr
}

/** Builds a ToolBoundaryError whose message and `llmMessage` follow the original's templates. */
export function boundaryError(init: Omit<ToolBoundaryErrorInit, "llmMessage">): ToolBoundaryError {
  const parts: string[] = []
  const field = init.field === undefined ? undefined : clipText(init.field)
  if (init.stage !== "allowlist") parts.push(`Tool '${clipText(init.toolName)}' ${HEADLINES[init.stage]}`)
  if (field !== undefined) parts.push(`Field: ${field}.`)
  if ("actual" in init)
    parts.push(`Received: ${init.actual === undefined ? "nothing" : shownValue(init.actual)}.`)
  // A schema library's message may quote the model's input (zod's unrecognized_keys lists every key).
  if (init.expected !== undefined) parts.push(`Expected: ${clipText(init.expected)}.`)
  // Hints name the field; a field named by the model (an unexpected key) is shown clipped there too.
  if (init.recoveryHint)
    parts.push(
      field !== init.field ? init.recoveryHint.split(init.field as string).join(field) : init.recoveryHint,
    )
  const message = `${clipText(init.toolName)}: ${init.violation}${field !== undefined ? ` on ${field}` : ""}`
  return new ToolBoundaryError(message, { ...init, llmMessage: parts.join(" ") })
}

/** What a `ToolBoundaryExhaustedError` carries: the last boundary error, and the transcript when the runner gave up. */
export interface ToolBoundaryExhaustedErrorInit {
  lastError: ToolBoundaryError
  messages?: readonly unknown[]
}

/** A tool kept failing its boundary after every retry the runner was allowed. */
export class ToolBoundaryExhaustedError extends MyceliumError {
  override readonly name = "ToolBoundaryExhaustedError"
  override readonly code = "tool_boundary_exhausted"
  readonly lastError: ToolBoundaryError
  /** The transcript at the point of giving up, including the error turns. */
  readonly messages: readonly unknown[]

  constructor(message: string, options: ToolBoundaryExhaustedErrorInit) {
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
