// `parseToolArguments`: JSON from a model, parsed so that transition keys match the Python original's, which
// parses the same text with `json.loads` (exact ints, floats). See docs/keys.md.
import { LedgerError } from "../errors.ts"

/** A value `parseToolArguments` returns: JSON, with `bigint` for integers beyond 2^53 (and boxed floats, below). */
export type ToolArgumentValue =
  | null
  | boolean
  | number
  | bigint
  // biome-ignore lint/complexity/noBannedTypes: a boxed Number marks a float Python keeps as one (see below)
  | Number
  | string
  | ToolArgumentValue[]
  | { [key: string]: ToolArgumentValue }

/** The tool-call arguments object a model produced. */
export type ToolArguments = { [key: string]: ToolArgumentValue }

/** The arguments text is not a JSON object. Nothing was called; ask the model to re-send valid JSON. */
export class ToolArgumentsError extends LedgerError {
  override readonly name = "ToolArgumentsError"
  override readonly code = "tool_arguments_invalid"
}

const TWO_53 = 2 ** 53
// From here JavaScript, like Python's float repr, writes integral numbers with an exponent.
const EXPONENT_FROM = 1e21

/**
 * Parses a tool call's JSON arguments the way Python's `json.loads` sees them, so the transition key matches:
 * - an integer beyond 2^53 (`9007199254740993`) is a `bigint`, exact; within 2^53 it is a `number`;
 * - `-0` is the integer 0 (`-0.0` stays the float -0);
 * - an integral float beyond 2^53 written as a float (`1e16`, `9007199254740993.0`) is a boxed `Number`, which the
 *   key writes as Python's float (`1e+16`); `+x` unboxes it. Below 2^53 `10.0` is the number 10, keyed as the
 *   integer `10` (the one case a JavaScript number cannot carry; docs/keys.md).
 * Ordinary input costs one `JSON.parse` and a walk over its numbers.
 */
export function parseToolArguments(text: string): ToolArguments {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw invalid(`the arguments are not valid JSON (${(e as Error).message})`)
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid(
      `the arguments must be a JSON object, got ${Array.isArray(value) ? "an array" : typeof value}`,
    )
  }
  try {
    if (!needsExactParse(value)) return value as ToolArguments
    return new ExactParser(text).parseDocument() as ToolArguments
  } catch (e) {
    // Valid JSON always parses here too; a RangeError is nesting too deep for the recursive parser.
    throw invalid(`the arguments could not be parsed exactly (${(e as Error).message})`)
  }
}

function invalid(detail: string): ToolArgumentsError {
  return new ToolArgumentsError(
    `Tool-call arguments rejected: ${detail}. The tool was not called; ask the model to send a JSON object.`,
  )
}

/** Whether `JSON.parse` may have lost something the key needs: a number at or beyond 2^53, or -0. */
function needsExactParse(v: unknown): boolean {
  if (typeof v === "number") return v >= TWO_53 || v <= -TWO_53 || (v === 0 && Object.is(v, -0))
  if (v === null || typeof v !== "object") return false
  if (Array.isArray(v)) {
    for (const x of v) if (needsExactParse(x)) return true
    return false
  }
  for (const k in v) if (needsExactParse((v as Record<string, unknown>)[k])) return true
  return false
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y

/** A small recursive-descent parser for text `JSON.parse` already accepted; only numbers differ from it. */
class ExactParser {
  #i = 0
  readonly #s: string
  constructor(s: string) {
    this.#s = s
  }

  parseDocument(): ToolArgumentValue {
    const v = this.#value()
    this.#ws()
    if (this.#i !== this.#s.length) throw new SyntaxError(`unexpected text at ${this.#i}`)
    return v
  }

  #ws(): void {
    const s = this.#s
    let i = this.#i
    for (;;) {
      const c = s.charCodeAt(i)
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++
      else break
    }
    this.#i = i
  }

  #value(): ToolArgumentValue {
    this.#ws()
    const c = this.#s[this.#i]
    if (c === "{") return this.#object()
    if (c === "[") return this.#array()
    if (c === '"') return this.#string()
    if (c === "t") return this.#literal("true", true)
    if (c === "f") return this.#literal("false", false)
    if (c === "n") return this.#literal("null", null)
    return this.#number()
  }

  #literal<T>(word: string, v: T): T {
    if (!this.#s.startsWith(word, this.#i)) throw new SyntaxError(`unexpected token at ${this.#i}`)
    this.#i += word.length
    return v
  }

  #object(): { [key: string]: ToolArgumentValue } {
    const out: { [key: string]: ToolArgumentValue } = {}
    this.#i++
    this.#ws()
    if (this.#s[this.#i] === "}") {
      this.#i++
      return out
    }
    for (;;) {
      this.#ws()
      if (this.#s[this.#i] !== '"') throw new SyntaxError(`expected a key at ${this.#i}`)
      const k = this.#string()
      this.#ws()
      if (this.#s[this.#i++] !== ":") throw new SyntaxError(`expected ':' at ${this.#i - 1}`)
      const v = this.#value()
      // An own property even for "__proto__", as JSON.parse makes it; never the prototype.
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
      this.#ws()
      const c = this.#s[this.#i++]
      if (c === "}") return out
      if (c !== ",") throw new SyntaxError(`expected ',' or '}' at ${this.#i - 1}`)
    }
  }

  #array(): ToolArgumentValue[] {
    const out: ToolArgumentValue[] = []
    this.#i++
    this.#ws()
    if (this.#s[this.#i] === "]") {
      this.#i++
      return out
    }
    for (;;) {
      out.push(this.#value())
      this.#ws()
      const c = this.#s[this.#i++]
      if (c === "]") return out
      if (c !== ",") throw new SyntaxError(`expected ',' or ']' at ${this.#i - 1}`)
    }
  }

  #string(): string {
    const s = this.#s
    const start = this.#i
    let i = start + 1
    let escaped = false
    for (;;) {
      const c = s.charCodeAt(i)
      if (Number.isNaN(c)) throw new SyntaxError("unterminated string")
      if (c === 0x22) break
      if (c === 0x5c) {
        escaped = true
        i++
      }
      i++
    }
    this.#i = i + 1
    return escaped ? (JSON.parse(s.slice(start, i + 1)) as string) : s.slice(start + 1, i)
  }

  #number(): ToolArgumentValue {
    NUMBER.lastIndex = this.#i
    const m = NUMBER.exec(this.#s)
    if (!m) throw new SyntaxError(`unexpected token at ${this.#i}`)
    this.#i = NUMBER.lastIndex
    const text = m[0]
    const n = Number(text)
    if (m[1] === undefined && m[2] === undefined) {
      // A JSON integer is a Python int: exact, and never -0.
      if (Number.isSafeInteger(n)) return n === 0 ? 0 : n
      return BigInt(text)
    }
    // A float. Integral ones beyond 2^53 would otherwise be keyed as ints: box them as floats.
    if (Number.isInteger(n) && Math.abs(n) >= TWO_53 && Math.abs(n) < EXPONENT_FROM) return new Number(n)
    return n
  }
}
