import type { Message, RepairAction, TranscriptFormat, TranscriptIssue } from "../types.ts"

/** A piece of a message: a tool call, a tool result, or anything else (kept verbatim). */
export interface Part {
  kind: "call" | "result" | "other"
  id?: string | undefined
  name?: string | undefined
  isError?: boolean
  /** Content given as a plain string (re-emitted as a string when it is the only part). */
  fromString?: boolean
  /**
   * A result the format allows outside the carrier role when it answers a provider-executed call (AI SDK
   * assistant tool-results); answering anything else, it is misplaced or orphaned like any result.
   */
  allowedForProviderCall?: boolean
  /** An "other" part that is a provider-executed call (its result may sit in the assistant message). */
  providerCallId?: string
  /** Set by toNodes: a result in a role the format does not allow results in. */
  misplaced?: boolean
  raw: unknown
}

export interface Decomposed {
  role: string
  /** The message without its parts. */
  shell: Message
  parts: Part[]
}

/**
 * Everything format-specific. The validator and repair algorithm work on decomposed messages: an
 * assistant's calls must be answered, each exactly once, by the "block" of carrier messages right after it.
 */
export interface FormatAdapter {
  readonly format: TranscriptFormat
  readonly roles: ReadonlySet<string>
  /** Roles of the system messages trim() keeps. */
  readonly systemRoles: ReadonlySet<string>
  /** Role of messages that carry tool results. */
  readonly carrierRole: string
  /** per-result: one message per result; grouped: any run of carrier messages; single: exactly one message. */
  readonly blockShape: "per-result" | "grouped" | "single"
  /** Prefix for ids assigned to calls that have none. */
  readonly idPrefix: string
  decompose(message: Message): Decomposed
  /** Rebuilds a message; null when nothing is left of it. */
  compose(shell: Message, parts: Part[]): Message | null
  withId(part: Part, id: string): unknown
  /** An error result carrying `text` for a call that has none. */
  synthetic(
    call: { id: string; name?: string | undefined },
    sample: readonly Decomposed[],
    text: string,
  ): Part
  /** Why a call's arguments are not a JSON object (the shape every provider requires), if they are not. */
  argumentsProblem(part: Part): string | undefined
  /** The call's raw arguments as sent, for the error result that closes it. */
  rawArguments(part: Part): unknown
  /** The call with its arguments replaced by an empty JSON object. */
  withEmptyArguments(part: Part): unknown
  /**
   * Calls the client library answers itself before the provider sees the prompt, when the carrier message
   * that ends the transcript is in their block: the AI SDK runs each approved call, and reports each denied
   * one, whose tool-approval-response is in that last message.
   */
  answeredByClient?(nodes: readonly Decomposed[]): ReadonlySet<unknown>
  /** A message the provider refuses for having no content (`last`: it ends the transcript). */
  isEmpty(message: Message, last: boolean): boolean
  /** Format-specific per-message problems (checked by validate). */
  check(message: Message, index: number): TranscriptIssue[]
  /** Fixes what check() reports; returns the fixed message. */
  fix(message: Message, index: number, actions: RepairAction[]): Message
}

/** Content arrays in Anthropic and AI SDK messages; strings become one `fromString` part. */
export function contentParts(
  content: unknown,
  classify: (block: Record<string, unknown>) => Part,
  textType: string,
): Part[] {
  if (typeof content === "string")
    return [{ kind: "other", fromString: true, raw: { type: textType, text: content } }]
  if (!Array.isArray(content))
    return content === undefined || content === null ? [] : [{ kind: "other", raw: content }]
  return content.map((b) =>
    typeof b === "object" && b !== null ? classify(b as Record<string, unknown>) : { kind: "other", raw: b },
  )
}

export function composeContent(shell: Message, parts: Part[]): Message | null {
  if (parts.length === 0) return null
  const only = parts[0]
  if (parts.length === 1 && only?.fromString)
    return { ...shell, content: (only.raw as { text: string }).text }
  return { ...shell, content: parts.map((p) => p.raw) }
}

export function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined
}
