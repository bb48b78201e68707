// Colours only for a person at a terminal: never when stdout is not a TTY or NO_COLOR is set; FORCE_COLOR forces.
const env = (
  globalThis as { process?: { env: Record<string, string | undefined>; stdout?: { isTTY?: boolean } } }
).process

const enabled = (): boolean => {
  if (env?.env.NO_COLOR) return false
  if (env?.env.FORCE_COLOR && env.env.FORCE_COLOR !== "0") return true
  return env?.stdout?.isTTY === true
}

// Every colour wraps text made inert: a control character in a row or an error shows as `\xNN`.
import { sha256Hex } from "../core/ledger/model/sha256.ts"
import { clean, SHOWN_CHARS } from "../core/repr.ts"

export { clean, SHOWN_CHARS }

/** How much of a row's arguments, result or error `show` prints (`--json` prints them whole). */
export const VALUE_CHARS = 4096

/**
 * The first 32 hex digits of the SHA-256 of `text`'s UTF-8 (as `printf %s "$ID" | sha256sum` prints it): two ids
 * sharing their first 300 characters and their length printed alike, and both rows often had fence 1. 128 bits, as
 * whoever writes both ids could make 8 digits (32 bits) collide in about 2^16 tries. A text with a lone surrogate
 * hashes its UTF-16 units after a 0xFF byte, which no UTF-8 holds, so it collides with no other text either.
 */
export function digestOf(text: string): string {
  // A lone surrogate, which UTF-8 cannot carry: an encoder writes U+FFFD for each, so two such ids hashed alike.
  if (text.isWellFormed()) return sha256Hex(text).slice(0, 32)
  const bytes = new Uint8Array(1 + text.length * 2)
  bytes[0] = 0xff
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    bytes[1 + 2 * i] = unit & 0xff
    bytes[2 + 2 * i] = unit >> 8
  }
  return sha256Hex(bytes).slice(0, 32)
}

/**
 * `text` cut to `max` characters with its length and digest said, for a terminal: a 1 MB request id (a
 * `requestIdFrom` argument) or tool name printed whole buried the listing and the next steps; the digest keeps two
 * texts cut alike apart. Not made inert: wrap it in clean() or a colour. A surrogate pair is never split.
 */
export function clip(text: unknown, max = SHOWN_CHARS): string {
  const s = String(text)
  if (s.length <= max) return s
  const end = /[\ud800-\udbff]/.test(s[max - 1] ?? "") ? max - 1 : max
  return `${s.slice(0, end)}... (${s.length} characters, sha256 ${digestOf(s)})`
}

/** Row or argument text as a line shows it: clipped, then inert. */
export const shown = (text: unknown, max = SHOWN_CHARS): string => clean(clip(text, max))

const CLIPPED = /\.\.\. \(\d+ characters, sha256 [0-9a-f]{32}\)$/

/** Whether an id typed on a command line has the shape of a clipped one as a line prints it. */
export const looksClipped = (arg: string): boolean => CLIPPED.test(arg)

/**
 * The one of `ids` that a line prints as `arg`, other than `arg` itself: an operator pasted a clipped id from a
 * listing. A row's id may be that very text, so the command would act on another row than the one they read.
 */
export function displayedAs(arg: string, ids: Iterable<string>): string | undefined {
  if (!looksClipped(arg)) return undefined
  for (const id of ids) {
    if (id === arg || id.length <= SHOWN_CHARS) continue
    const c = clip(id)
    // As the terminal got it too: stdout is UTF-8, where a lone surrogate in the shown part is U+FFFD.
    if (c === arg || clean(c) === arg || clean(c).toWellFormed() === arg) return id
  }
  return undefined
}

const wrap =
  (open: number, close: number) =>
  (text: string): string =>
    enabled() ? `\u001b[${open}m${clean(text)}\u001b[${close}m` : clean(text)

export const bold = wrap(1, 22)
export const dim = wrap(2, 22)
export const red = wrap(31, 39)
export const green = wrap(32, 39)
export const yellow = wrap(33, 39)

/**
 * Prints a value as JSON for scripts (`--json`): a bigint becomes its exact decimal digits as a string, never a crash.
 * JSON escapes C0 controls but not DEL or C1 (U+0080..U+009F, where 0x9B starts a sequence on some terminals), nor
 * the invisible format characters and separators clean() shows (a bidi override reorders a row on screen): they are
 * escaped too, which any JSON reader reads back as the same text.
 */
export function printJson(value: unknown): void {
  const text = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2)
  // Per UTF-16 unit: a tag character (U+E0001..) is written as its surrogate pair, as JSON spells it.
  console.log(
    text.replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu, (c) =>
      c
        .split("")
        .map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`)
        .join(""),
    ),
  )
}

/**
 * How the person reading this output runs the CLI: `npx mycelium` where the package is installed, but a checkout of
 * this repository links no bin, so hints printed there (`npm start`'s demo) name the way that works there.
 */
export const CLI = import.meta.url.includes("/node_modules/")
  ? "npx mycelium"
  : import.meta.url.endsWith(".ts")
    ? "npx tsx src/cli/main.ts"
    : "node dist/cli/main.js"
