import { InvalidOptionError } from "../errors.ts"
import { safeString } from "../repr.ts"
import { detectFormat } from "./detect.ts"
import { DROP_ADVICE, MessageValidationError } from "./errors.ts"
import type { FormatAdapter } from "./formats/adapter.ts"
import { aiSdkAdapter } from "./formats/ai-sdk.ts"
import { anthropicAdapter } from "./formats/anthropic.ts"
import { openaiAdapter } from "./formats/openai.ts"
import { repairTranscript } from "./repair.ts"
import type { RepairReport, TranscriptFormat, TranscriptIssue } from "./types.ts"
import { findIssues } from "./validate.ts"

const ADAPTERS: Record<TranscriptFormat, FormatAdapter> = {
  openai: openaiAdapter,
  anthropic: anthropicAdapter,
  "ai-sdk": aiSdkAdapter,
}

export function adapterFor(format: TranscriptFormat): FormatAdapter {
  return ADAPTERS[format]
}

const FORMATS = ["auto", ...Object.keys(ADAPTERS)]

// Checked when the guard is built: an unknown format ("gemini") failed on first use with "Cannot read properties
// of undefined".
export function formatOption(format: unknown, who: string): TranscriptFormat | "auto" {
  if (format === undefined) return "auto"
  if (FORMATS.includes(format as string)) return format as TranscriptFormat
  throw new InvalidOptionError(`${who}: format must be one of ${FORMATS}, got ${safeString(format)}`)
}

/** Refuses, with a typed error, a transcript that JavaScript passed as something other than an array. */
export function messageList(messages: unknown, who: string): void {
  if (!Array.isArray(messages))
    throw new InvalidOptionError(
      `${who}: pass the messages as an array, got ${messages === null ? "null" : typeof messages}`,
    )
}

/** Options for {@link MessageValidator}. */
export interface MessageValidatorOptions {
  /** Transcript format; "auto" (default) detects it per call. */
  format?: TranscriptFormat | "auto"
  /** Reject roles the format does not define. Default true. */
  strictRoles?: boolean
  /** Accept unanswered calls in the last message (the tools are still running). Default false. */
  allowPendingToolCalls?: boolean
  /** What repair() does with non-objects and invalid roles: throw (default; it cannot infer them) or drop. */
  invalidMessages?: "throw" | "drop"
}

/** The result of {@link MessageValidator.repair}. */
export interface RepairResult<M> {
  messages: M[]
  report: RepairReport
}

/**
 * Checks a transcript before it is sent to a model (OpenAI chat, Anthropic messages, or AI SDK model
 * messages) and repairs the breakages providers reject: orphaned, misplaced and duplicate tool results,
 * reused tool-call ids, calls left without a result by an abort, and serialization artifacts.
 */
export class MessageValidator {
  readonly #options: Required<MessageValidatorOptions>

  constructor(options: MessageValidatorOptions = {}) {
    this.#options = {
      format: formatOption(options.format, "MessageValidator"),
      strictRoles: options.strictRoles ?? true,
      allowPendingToolCalls: options.allowPendingToolCalls ?? false,
      invalidMessages: options.invalidMessages ?? "throw",
    }
  }

  /** The format used for `messages` (the configured one, or the detected one). */
  formatOf(messages: readonly unknown[]): TranscriptFormat {
    messageList(messages, "MessageValidator")
    return this.#options.format === "auto" ? detectFormat(messages) : this.#options.format
  }

  /** Every problem found, in message order; empty when the transcript is valid. */
  check(messages: readonly unknown[]): TranscriptIssue[] {
    return findIssues(messages, adapterFor(this.formatOf(messages)), this.#options)
  }

  /** Returns `messages` unchanged, or throws MessageValidationError for the first problem. */
  validate<M>(messages: readonly M[]): readonly M[] {
    const first = this.check(messages)[0]
    if (!first) return messages
    const { violation: v } = first
    throw new MessageValidationError(first.reason, {
      ...first,
      // repair() refuses what it cannot infer; the way out of those is to fix or drop the message.
      advice:
        v === "invalid_message" || v === "invalid_role"
          ? DROP_ADVICE
          : "Run MessageValidator.repair() to fix what can be fixed automatically.",
    })
  }

  /** Returns a repaired copy and what was changed. The input is never mutated. */
  repair<M>(messages: readonly M[]): RepairResult<M> {
    const format = this.formatOf(messages)
    const { messages: out, actions } = repairTranscript(messages, adapterFor(format), this.#options)
    const changed = actions.length > 0 || !samePlain(messages, out)
    return { messages: out as M[], report: { format, changed, actions } }
  }
}

// Iterative for the same reason as clonePlain: tool input can be nested deeper than the stack. It never meets a
// cycle: repair() refuses or drops a message holding one first.
function samePlain(a: unknown, b: unknown): boolean {
  const pairs: [unknown, unknown][] = [[a, b]]
  for (let pair = pairs.pop(); pair; pair = pairs.pop()) {
    const [x, y] = pair
    if (x === y) continue
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false
      for (let i = 0; i < x.length; i++) pairs.push([x[i], y[i]])
      continue
    }
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null || Array.isArray(y))
      return false
    const kx = Object.keys(x)
    if (kx.length !== Object.keys(y).length) return false
    for (const k of kx) pairs.push([(x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k]])
  }
  return true
}
