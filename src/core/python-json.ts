// Python's json.dumps with its default separators (", " and ": "), ASCII escapes and float repr. The original
// writes its receipt lines this way and hashes task arguments this way (with sort_keys).
import { type ExactJsonValue, parseExactJson } from "./exact-json.ts"
import {
  canonicalNumber,
  canonicalString,
  compareCodePoints,
  pythonFloatRepr,
} from "./ledger/model/canonical.ts"

export interface PythonDumpsOptions {
  /** `sort_keys=True`: by code point, as canonicalJson sorts. */
  readonly sortKeys?: boolean
}

/**
 * A JS number as Python prints it, by the keys' rule (docs/keys.md): integral numbers are ints (digits exact, also
 * beyond 2^53), everything else and -0 a float. The same text canonicalJson writes, so a receipt line and the text
 * its signature covers agree.
 */
export const pythonNumber: (x: number) => string = canonicalNumber

export function pythonDumps(value: unknown, options: PythonDumpsOptions = {}): string {
  const write = (v: unknown): string => {
    switch (typeof v) {
      case "number":
        return pythonNumber(v)
      case "string":
        return canonicalString(v)
      case "boolean":
        return v ? "true" : "false"
      case "bigint":
        return v.toString()
      case "undefined":
        return "null"
      case "object": {
        if (v === null) return "null"
        // A float parsePythonJson kept as one (`100.0`).
        if (v instanceof Number) return pythonFloatRepr(v.valueOf())
        if (Array.isArray(v)) return `[${v.map(write).join(", ")}]`
        const withJson = v as { toJSON?: () => unknown }
        if (typeof withJson.toJSON === "function") return write(withJson.toJSON())
        const entries = Object.entries(v).filter(([, x]) => x !== undefined)
        if (options.sortKeys) entries.sort(([a], [b]) => compareCodePoints(a, b))
        return `{${entries.map(([k, x]) => `${canonicalString(k)}: ${write(x)}`).join(", ")}}`
      }
      default:
        return canonicalString(String(v))
    }
  }
  return write(value)
}

// A number token with a fraction or an exponent whose value could be integral: `100.0`, `1e3`; or the integer
// `-0`, which json.loads reads as the int 0 and JSON.parse as the float -0 (written back `-0.0`: another text).
// Matches inside strings too, which only sends that text through the slower exact parser.
const INTEGRAL_FLOAT_HINT = /\d(?:\.0+)?[eE]|\d\.0+(?![0-9])|-0(?![.\deE])/
// 16 digits or more, a point between them or not. JSON.parse reads one otherwise than json.loads only when its value
// is integral: an integer beyond 2^53 (an exact int to Python), or a fraction it rounds to a whole number
// (`100000.000000000001`, a float to Python). Any other (a `time.time()` timestamp) is the same double in both.
const LONG_NUMBER = /(?:\d\.?){16}[\d.]*/g

const readsOtherwise = (text: string): boolean =>
  INTEGRAL_FLOAT_HINT.test(text) ||
  [...text.matchAll(LONG_NUMBER)].some(([m]) => {
    const n = Number(m)
    return !(n % 1) && (m.includes(".") || !Number.isSafeInteger(n))
  })

/**
 * `json.loads` of text the original wrote, kept so that writing it back in Python's forms gives the same text: a
 * float stays a float (`100.0` is a boxed `Number`; `+x` unboxes it) and an integer beyond 2^53 a `bigint`.
 * Python's bare `NaN`, `Infinity` and `-Infinity` are read as json.loads reads them. Text without any of these
 * costs one `JSON.parse`. Throws SyntaxError on text json.loads would refuse, and nothing on valid JSON.
 */
export function parsePythonJson(text: string): ExactJsonValue {
  let value: ExactJsonValue
  try {
    value = JSON.parse(text) as ExactJsonValue
  } catch (e) {
    // Python's json writes NaN and Infinity as bare tokens, which JSON.parse refuses and json.loads reads.
    try {
      return parseExactJson(text, "all")
    } catch {
      throw e
    }
  }
  if (!readsOtherwise(text)) return value
  try {
    return parseExactJson(text, "all")
  } catch {
    // Valid JSON nested too deep for the recursive parser (RangeError): JSON.parse's reading, never a failure.
    return value
  }
}
