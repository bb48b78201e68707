import { InvalidOptionError } from "../errors.ts"
import { safeString } from "../repr.ts"
import { decisiveFormat } from "./detect.ts"
import { HistoryDropError, HistoryDuplicateTurnsError, HistoryTruncatedError } from "./history-errors.ts"
import { fingerprint, heuristicTokens, messageText } from "./history-text.ts"
import { adapterFor, formatOption, messageList } from "./message-validator.ts"
import { blockOf, hasCalls, toNodes } from "./nodes.ts"
import type { TranscriptFormat } from "./types.ts"

/** Events a HistoryGuard reports through `onEvent`. */
export type HistoryEvent =
  | { type: "history_near_limit"; estimatedTokens: number; maxTokens: number; pct: number }
  | { type: "history_trimmed"; removed: number; estimatedTokens: number }

/** Options for {@link HistoryGuard}. */
export interface HistoryGuardOptions {
  maxTokens?: number
  maxMessages?: number
  /** Fraction of maxTokens that triggers a `history_near_limit` event. Default 0.9. */
  warnAt?: number
  /**
   * "consecutive" (default) flags identical turns back to back; "anywhere" is the original's rule, which
   * also flags legitimate repeats ("ok" twice in a conversation); false disables it.
   */
  detectDuplicates?: "consecutive" | "anywhere" | boolean
  /** Raise when messages seen by the previous validate() vanish. Default true. */
  detectDrops?: boolean
  /** Tokens for one message's text; defaults to the original's ⌊len/4⌋ heuristic. */
  tokenizer?: (text: string) => number
  /** Transcript format, for keeping tool calls with their results in trim(). Default "auto". */
  format?: TranscriptFormat | "auto"
  onEvent?: (event: HistoryEvent) => void
}

/**
 * Guards the history sent to a model: token and message limits, duplicated turns, messages silently
 * dropped between calls, and a trim() that never separates a tool call from its results.
 */
export class HistoryGuard {
  readonly #o: HistoryGuardOptions
  #baseline: Map<string, number> | undefined

  constructor(options: HistoryGuardOptions = {}) {
    // A copy: limits changed after the check (to NaN) were used unchecked.
    // Field by field, not a spread, which drops inherited fields and getters (limits on a defaults object).
    const { maxTokens, maxMessages, warnAt, detectDuplicates, detectDrops, tokenizer, format, onEvent } =
      options
    const o = { maxTokens, maxMessages, warnAt, detectDuplicates, detectDrops, tokenizer, format, onEvent }
    this.#o = o
    // NaN (Number() of an unset environment variable) compares false with every count: the limit was never enforced.
    for (const key of ["maxTokens", "maxMessages", "warnAt"] as const) {
      const v = o[key]
      if (v !== undefined && !(Number.isFinite(v) && v >= 0))
        throw new InvalidOptionError(
          `HistoryGuard ${key} must be a finite number >= 0 or left out, got ${typeof v} ${safeString(v)}`,
        )
    }
    // A tiktoken encoder or a logger object failed later with a bare TypeError, onEvent only once near the limit.
    for (const key of ["tokenizer", "onEvent"] as const) {
      const v = o[key]
      if (v !== undefined && typeof v !== "function")
        throw new InvalidOptionError(
          `HistoryGuard ${key} must be a function, got ${typeof v} ${safeString(v)}`,
        )
    }
    // A typo ("Anywhere") read as "consecutive" would miss the duplicates it was set to find.
    const d = o.detectDuplicates
    if (d !== undefined && typeof d !== "boolean" && d !== "consecutive" && d !== "anywhere")
      throw new InvalidOptionError(
        `HistoryGuard detectDuplicates must be "consecutive", "anywhere" or a boolean, got ${safeString(d)}`,
      )
    formatOption(o.format, "HistoryGuard")
  }

  // A token list (tiktoken's encode()) or NaN made the estimate a string or NaN, and `tokens > maxTokens` false.
  #count(text: string): number {
    const n = (this.#o.tokenizer ?? heuristicTokens)(text)
    if (!(Number.isFinite(n) && n >= 0))
      throw new InvalidOptionError(
        "HistoryGuard tokenizer must return a count >= 0: pass e.g. (t) => encode(t).length",
      )
    return n
  }

  /** Estimated tokens: 3 + Σ (4 + tokenizer(text)). */
  estimateTokens(messages: readonly unknown[]): number {
    messageList(messages, "HistoryGuard")
    return messages.reduce<number>((sum, m, i) => sum + 4 + this.#count(messageText(m, i)), 3)
  }

  /** Throws a HistoryTruncatedError (or subclass) if the history breaks a limit; returns it unchanged otherwise. */
  validate<M>(messages: readonly M[]): readonly M[] {
    const { maxTokens, maxMessages, warnAt = 0.9 } = this.#o
    const tokens = this.estimateTokens(messages)
    const info = { messageCount: messages.length, estimatedTokens: tokens }
    if (maxTokens !== undefined && tokens > maxTokens) {
      throw new HistoryTruncatedError(
        `Message history would exceed token limit: ~${tokens} estimated tokens > ${maxTokens} max. Call trim() or summarize older turns.`,
        { ...info, reason: "token_limit" },
      )
    }
    if (maxTokens !== undefined && tokens >= maxTokens * warnAt) {
      this.#o.onEvent?.({
        type: "history_near_limit",
        estimatedTokens: tokens,
        maxTokens,
        pct: tokens / maxTokens,
      })
    }
    if (maxMessages !== undefined && messages.length > maxMessages) {
      throw new HistoryTruncatedError(
        `Message history exceeds max_messages: ${messages.length} > ${maxMessages}. Call trim() or summarize older turns.`,
        { ...info, reason: "message_count" },
      )
    }
    const dups = this.#duplicates(messages)
    if (dups.length > 0) {
      throw new HistoryDuplicateTurnsError(
        `Duplicate turns detected at index(s) [${dups.join(", ")}]. A message was appended twice; remove the copies.`,
        { ...info, indices: dups },
      )
    }
    if (this.#o.detectDrops !== false) this.#checkDrops(messages, info)
    this.#baseline = counts(messages)
    return messages
  }

  /** The original's explicit drop check against the last validate()/trim(). */
  checkForDrops(messages: readonly unknown[]): void {
    messageList(messages, "HistoryGuard")
    if (!this.#baseline) {
      throw new HistoryTruncatedError(
        "checkForDrops() called before validate(): there is no earlier history to compare with.",
        { reason: "dropped_messages", messageCount: messages.length, estimatedTokens: 0 },
      )
    }
    this.#checkDrops(messages, {
      messageCount: messages.length,
      estimatedTokens: this.estimateTokens(messages),
    })
  }

  /** Accepts `messages` as the new baseline (after an intentional edit or summary). */
  accept(messages: readonly unknown[]): void {
    messageList(messages, "HistoryGuard")
    this.#baseline = counts(messages)
  }

  /** Forgets the baseline. */
  reset(): void {
    this.#baseline = undefined
  }

  /**
   * Drops the oldest turns until the history fits maxTokens and maxMessages. System messages stay, and an
   * assistant message with tool calls is dropped together with all of its results. The result becomes the
   * drop-detection baseline. Throws HistoryTruncatedError ("cannot_fit") if the system messages and the
   * latest turn alone are over the limit.
   */
  trim<M>(messages: readonly M[]): M[] {
    messageList(messages, "HistoryGuard")
    const auto = !this.#o.format || this.#o.format === "auto"
    const decisive = auto ? decisiveFormat(messages) : null
    const format = auto ? (decisive ?? "openai") : (this.#o.format as TranscriptFormat)
    const adapter = adapterFor(format)
    const nodes = toNodes(messages, adapter)
    const groups: number[][] = []
    for (let i = 0; i < nodes.length; i++) {
      const block = hasCalls(nodes[i]) ? blockOf(nodes, i, adapter) : []
      // A legacy OpenAI function_call's result is the `function` message after it: grouped by tool_calls alone,
      // trim() kept the result and dropped its call.
      const next = i + block.length + 1
      if ((messages[i] as { function_call?: unknown })?.function_call && nodes[next]?.role === "function")
        block.push(next)
      groups.push([i, ...block])
      i += block.length
    }
    const pinned = (g: number[]) =>
      g.length === 1 && adapter.systemRoles.has(nodes[g[0] as number]?.role ?? "")
    // Each message is measured once and groups are dropped oldest first, so trimming a long history stays
    // linear (re-estimating the whole history after every drop took 40 s for 16,000 messages).
    const groupTokens = groups.map((g) =>
      g.reduce((sum, i) => sum + 4 + this.#count(messageText(messages[i], i)), 0),
    )
    const order = [...groups.keys()].filter((k) => !pinned(groups[k] as number[]))
    let next = 0 // order[next] is the oldest droppable group still kept
    let tokens = groupTokens.reduce((a, b) => a + b, 3)
    let length = messages.length
    const { maxTokens, maxMessages } = this.#o
    const fits = () =>
      (maxTokens === undefined || tokens <= maxTokens) && (maxMessages === undefined || length <= maxMessages)
    // Anthropic requires the first turn to be the user's, so trimming continues past leading assistant turns.
    // A plain-text transcript could be Anthropic's (nothing tells it from OpenAI's), so once trimming dropped
    // something the rule holds there too: the answer left at the head is half a turn whose question is gone.
    const leadsWithAssistant = () => {
      const first = order[next]
      const head = first === undefined ? undefined : groups[first]?.[0]
      const applies = format === "anthropic" || (auto && decisive === null && next > 0)
      return applies && head !== undefined && nodes[head]?.role === "assistant"
    }
    while ((!fits() || leadsWithAssistant()) && order.length - next > 1) {
      const k = order[next++] as number
      tokens -= groupTokens[k] as number
      length -= (groups[k] as number[]).length
    }
    const dropped = new Set(order.slice(0, next))
    const out = [...groups.keys()]
      .filter((k) => !dropped.has(k))
      .flatMap((k) => groups[k] as number[])
      .map((i) => messages[i] as M)
    if (!fits() || leadsWithAssistant()) {
      throw new HistoryTruncatedError(
        `Cannot trim below the limit: system messages and the latest turn alone need ~${tokens} tokens in ${out.length} messages. Raise maxTokens/maxMessages or shorten them.`,
        { reason: "cannot_fit", messageCount: out.length, estimatedTokens: tokens },
      )
    }
    if (out.length < messages.length) {
      this.#o.onEvent?.({
        type: "history_trimmed",
        removed: messages.length - out.length,
        estimatedTokens: tokens,
      })
    }
    this.#baseline = counts(out)
    return out
  }

  #duplicates(messages: readonly unknown[]): number[] {
    const mode = this.#o.detectDuplicates ?? "consecutive"
    if (mode === false) return []
    const fps = messages.map(fingerprint)
    if (mode === "anywhere") {
      const seen = new Set<string>()
      return fps.flatMap((f, i) => {
        if (seen.has(f)) return [i]
        seen.add(f)
        return []
      })
    }
    return fps.flatMap((f, i) => (i > 0 && fps[i - 1] === f ? [i] : []))
  }

  #checkDrops(messages: readonly unknown[], info: { messageCount: number; estimatedTokens: number }): void {
    if (!this.#baseline) return
    const now = counts(messages)
    let dropped = 0
    let had = 0
    for (const [f, n] of this.#baseline) {
      had += n
      dropped += Math.max(0, n - (now.get(f) ?? 0))
    }
    if (dropped > 0) {
      throw new HistoryDropError(
        `${dropped} message(s) were silently dropped from the history. Had ${had} messages, now have ${messages.length}. ` +
          "Trim with HistoryGuard.trim(), or call accept() after an intentional edit.",
        { ...info, dropped },
      )
    }
  }
}

function counts(messages: readonly unknown[]): Map<string, number> {
  const m = new Map<string, number>()
  for (const f of messages.map(fingerprint)) m.set(f, (m.get(f) ?? 0) + 1)
  return m
}
