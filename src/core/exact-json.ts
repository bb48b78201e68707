// JSON parsed the way Python's `json.loads` sees it, for the places where JavaScript's one number type would change
// what gets hashed or signed: integers beyond 2^53 stay exact (`bigint`), and a float written as a float (`1e16`,
// `100.0`) can stay a float (a boxed `Number`, which canonicalJson and pythonDumps write in Python's float repr).
// Python's `json` also writes NaN and Infinity as bare tokens (not JSON); they are read as json.loads reads them.
import { defineOwn } from "./own.ts"

/** A value `parseExactJson` returns: JSON, with `bigint` for integers beyond 2^53 and boxed Numbers for floats. */
export type ExactJsonValue =
  | null
  | boolean
  | number
  | bigint
  // biome-ignore lint/complexity/noBannedTypes: a boxed Number marks a float Python keeps as one
  | Number
  | string
  | ExactJsonValue[]
  | { [key: string]: ExactJsonValue }

/**
 * How numbers are read. `"beyond-2^53"`: integers beyond 2^53 as `bigint`, and only the integral floats a
 * JavaScript number would otherwise turn into an int's key boxed (tool arguments: `10.0` keys as `10`, see
 * docs/keys.md). `"all"`: the same, and every integral float boxed, as a signature over the text needs (`100.0` must
 * be written back as `100.0`).
 */
export type IntegralFloats = "beyond-2^53" | "all"

const TWO_53 = 2 ** 53
// From here JavaScript, like Python's float repr, writes integral numbers with an exponent.
const EXPONENT_FROM = 1e21

/** Parses JSON text exactly (see above). Throws SyntaxError on invalid text, RangeError on very deep nesting. */
export function parseExactJson(text: string, floats: IntegralFloats): ExactJsonValue {
  return new ExactParser(text, floats).parseDocument()
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y

/** A small recursive-descent parser; it differs from `JSON.parse` only in numbers and the bare NaN/Infinity. */
class ExactParser {
  #i = 0
  readonly #s: string
  readonly #floats: IntegralFloats
  constructor(s: string, floats: IntegralFloats) {
    this.#s = s
    this.#floats = floats
  }

  parseDocument(): ExactJsonValue {
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

  #value(): ExactJsonValue {
    this.#ws()
    const c = this.#s[this.#i]
    if (c === "{") return this.#object()
    if (c === "[") return this.#array()
    if (c === '"') return this.#string()
    if (c === "t") return this.#literal("true", true)
    if (c === "f") return this.#literal("false", false)
    if (c === "n") return this.#literal("null", null)
    if (c === "N") return this.#literal("NaN", Number.NaN)
    if (c === "I") return this.#literal("Infinity", Infinity)
    if (c === "-" && this.#s[this.#i + 1] === "I") return this.#literal("-Infinity", -Infinity)
    return this.#number()
  }

  #literal<T>(word: string, v: T): T {
    if (!this.#s.startsWith(word, this.#i)) throw new SyntaxError(`unexpected token at ${this.#i}`)
    this.#i += word.length
    return v
  }

  #object(): { [key: string]: ExactJsonValue } {
    const out: { [key: string]: ExactJsonValue } = {}
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
      defineOwn(out, k, v)
      this.#ws()
      const c = this.#s[this.#i++]
      if (c === "}") return out
      if (c !== ",") throw new SyntaxError(`expected ',' or '}' at ${this.#i - 1}`)
    }
  }

  #array(): ExactJsonValue[] {
    const out: ExactJsonValue[] = []
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

  #number(): ExactJsonValue {
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
    // A float. An integral one would be written back as an int: box it, where the caller needs it kept a float.
    // -0 needs no box: a plain -0 is already written back as the float -0.0.
    if (!Number.isInteger(n) || Math.abs(n) >= EXPONENT_FROM || Object.is(n, -0)) return n
    if (this.#floats === "all" || Math.abs(n) >= TWO_53) return new Number(n)
    return n
  }
}
