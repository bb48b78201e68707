// Text some stores cannot keep: NUL and unpaired surrogates are valid JSON escapes, but Postgres refuses both in
// JSONB and Lua's cjson an unpaired surrogate, so the edge API refuses them for every store (its API is the same on
// all). A store that declares `validUnicodeOnly` refuses such a row itself, typed (`keepableJson`), and the ledger
// completes a result holding them as unstorable, before the store would refuse the write after the effect ran.

import { LedgerConfigError } from "../ledger/errors.ts"
import { entryToRow, type LedgerEntry } from "../ledger/model/entry.ts"
import { clip } from "../repr.ts"
import type { ListOptions } from "./contract.ts"

/** Whether `s` holds text no store can be trusted with. */
export const isUnstorableText = (s: string): boolean => !s.isWellFormed() || s.includes("\0")

/**
 * For a `validUnicodeOnly` store's `list`: true when the prefix holds such text, which no id does (every write
 * refuses it), so nothing is listed. Sent on, Postgres failed on U+0000 as if it were down, and the driver or a Redis
 * key sent an unpaired surrogate as U+FFFD: the U+FFFD prefix's rows. A cursor holding it was never a page's last
 * id: refused with `LedgerConfigError`, as a page resuming after the U+FFFD id would skip or repeat rows.
 */
export function listsNothing(options: ListOptions): boolean {
  if (options.cursor !== undefined && isUnstorableText(options.cursor))
    throw new LedgerConfigError("a list cursor is a page's last id, never U+0000 or an unpaired surrogate")
  return options.prefix !== undefined && isUnstorableText(options.prefix)
}

/**
 * For a store that sends or orders keys as UTF-8 (Postgres, Redis, a URL, SQLite), before `listsNothing`: a prefix
 * ending in a pair's first half (an id cut by `slice`) starts the ids holding a pair there, as `startsWith` and the
 * memory store read it, but such a store cannot be sent the half alone nor find those ids as one range of its keys.
 * What to list instead: the prefix without it, unlimited.
 */
export function pairHeadOptions(options: ListOptions): ListOptions | null {
  const p = options.prefix
  if (!p || p.charCodeAt(p.length - 1) >> 10 !== 0x36 || isUnstorableText(p.slice(0, -1))) return null
  return { ...options, prefix: p.slice(0, -1), limit: undefined }
}

/** The rows listed with `pairHeadOptions` that start with the whole prefix, up to the caller's limit. */
export async function* startingWith(
  rows: AsyncIterable<LedgerEntry>,
  options: ListOptions,
): AsyncIterable<LedgerEntry> {
  const prefix = options.prefix ?? ""
  let left = options.limit ?? Infinity
  if (left <= 0) return
  let seen = false
  for await (const e of rows) {
    if (e.requestId.startsWith(prefix)) {
      seen = true
      yield e
      if (--left <= 0) return
      // The ids under the whole prefix are one run in UTF-16 and in code-point order alike: once it ends, none follow.
    } else if (seen) return
  }
}

/**
 * Whether JSON text written by `JSON.stringify` holds such a character: it writes each as an escape (`\u0000`,
 * `\ud800`), and a paired surrogate as itself. An escape counts unless its backslash is itself escaped.
 */
export const jsonHoldsUnstorableText = (json: string): boolean =>
  /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f])/i.test(json)

/**
 * `json`, a row's payload as `JSON.stringify` wrote it, for a store that declares `validUnicodeOnly`; one holding
 * such a character is refused with `LedgerConfigError` (a store's own refusal would read as an outage).
 */
export function keepableJson(json: string, requestId: string): string {
  if (jsonHoldsUnstorableText(json))
    throw new LedgerConfigError(
      `request '${clip(requestId)}': the row holds U+0000 or an unpaired surrogate, which this store cannot keep; ` +
        "nothing was written",
    )
  return json
}

/** An entry's stored payload as JSON text, through `keepableJson`: what a `validUnicodeOnly` store writes. */
export const keepablePayload = (e: LedgerEntry): string =>
  keepableJson(JSON.stringify(entryToRow(e)), e.requestId)

/**
 * `s` as text every store keeps: at most `max` UTF-16 units, cut between code points (never inside an emoji's
 * surrogate pair), NUL and unpaired surrogates replaced by U+FFFD.
 */
export const storableText = (s: string, max: number): string =>
  s
    .slice(0, max - +(s.length > max && s.charCodeAt(max - 1) >> 10 === 0x36))
    .toWellFormed()
    .replaceAll("\0", "\ufffd")

/**
 * The most a recorded failure keeps of its error's text (the edge API's limit too): a tool's error of several MB
 * made a Durable Object's write fail (SQLite's 2 MB) and stranded the row IN_FLIGHT.
 */
export const MAX_ERROR_TEXT = 4096
