// Python's `json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)`, byte for byte, so that
// transition keys, args fingerprints and receipt HMACs match the Python original's.
import { defineOwn } from "../../own.ts"
import { LedgerConfigError } from "../errors.ts"

/** A value that survives `canonicalJson` unchanged in meaning. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

// An ASCII unit's escape as JSON.stringify writes it, which is as Python does (\n, \u001f: the same short forms,
// lowercase hex), computed at load.
const ASCII_ESCAPES = /* @__PURE__ */ Array.from({ length: 0x7f }, (_, c) =>
  JSON.stringify(String.fromCharCode(c)).slice(1, -1),
)

/** A JSON string literal exactly as Python's ensure_ascii writes it. */
export function canonicalString(s: string): string {
  let out = '"'
  let start = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c) continue
    if (i > start) out += s.slice(start, i)
    start = i + 1
    // DEL and non-ASCII as UTF-16 units: a surrogate pair as its two halves, as Python escapes it.
    out += c < 0x7f ? ASCII_ESCAPES[c] : `\\u${c.toString(16).padStart(4, "0")}`
  }
  if (start === 0) return `"${s}"`
  return `${out}${s.slice(start)}"`
}

/**
 * Python's float repr: shortest round-trip digits (the same digits JavaScript prints), scientific below 1e-4 and
 * from 1e16 with a two-digit exponent at least, fixed-point with a ".0" for whole numbers in between (where
 * `String()` is fixed-point too: it switches to an exponent only below 1e-6 and from 1e21).
 */
export function pythonFloatRepr(x: number): string {
  // Infinity, -Infinity and NaN: JavaScript's names are Python's.
  if (!Number.isFinite(x)) return String(x)
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0"
  const abs = Math.abs(x)
  if (abs < 1e-4 || abs >= 1e16) {
    const [mant, exp = "+0"] = x.toExponential().split("e")
    return `${mant}e${exp[0]}${exp.slice(1).padStart(2, "0")}`
  }
  const s = String(x)
  return s.includes(".") ? s : `${s}.0`
}

// Beyond this JavaScript prints integral numbers with an exponent, as Python's float repr does.
const EXPONENT_FROM = 1e21

/** A JS number as canonical JSON writes it (the Python int or float it stands for); also `pythonDumps`'s numbers. */
export function canonicalNumber(x: number): string {
  // A JS number cannot tell 10 from 10.0: integral numbers are Python ints (docs/keys.md), digits exactly as
  // Python writes the int of the same value. -0 exists only as a float in Python.
  if (Number.isSafeInteger(x)) return x === 0 && Object.is(x, -0) ? "-0.0" : String(x)
  // Beyond 2^53 String() pads shortest digits with zeros (2**60 -> ...847000); Python prints the exact int.
  if (Number.isInteger(x) && x < EXPONENT_FROM && x > -EXPONENT_FROM) return BigInt(x).toString()
  return pythonFloatRepr(x)
}

// Python sorts keys by code point; JS compares UTF-16 units, which differs for a surrogate pair (one astral code
// point) against U+E000..U+FFFF, and a lone surrogate (its own code point, below U+E000) against a pair. Spreading
// a string yields its code points that way, as Python's json.loads decodes them. Only keys with surrogates come here.
export function compareCodePoints(a: string, b: string): number {
  const x = [...a]
  const y = [...b]
  for (let i = 0; i < x.length && i < y.length; i++) {
    const d = (x[i]?.codePointAt(0) as number) - (y[i]?.codePointAt(0) as number)
    if (d) return d
  }
  return x.length - y.length
}

const SURROGATE = /[\ud800-\udfff]/

/** An object's members as canonical JSON: defined values only, keys sorted by code point. */
function writeMembers(obj: Readonly<Record<string, unknown>>, keys: string[]): string {
  const defined: string[] = []
  for (const k of keys) if (obj[k] !== undefined) defined.push(k)
  if (defined.length > 1) {
    if (defined.some((k) => SURROGATE.test(k))) defined.sort(compareCodePoints)
    else defined.sort()
  }
  let out = "{"
  for (let i = 0; i < defined.length; i++) {
    const k = defined[i] as string
    out += `${i ? "," : ""}${canonicalString(k)}:${canonicalJson(obj[k])}`
  }
  return `${out}}`
}

/** Python-compatible canonical JSON: sorted keys, compact separators, ASCII escapes, Python float repr. */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      return canonicalString(value)
    case "number":
      return canonicalNumber(value)
    case "boolean":
      return value ? "true" : "false"
    case "bigint":
      return value.toString()
    case "undefined":
      return "null"
    case "object": {
      if (value === null) return "null"
      if (Array.isArray(value)) {
        let out = "["
        for (let i = 0; i < value.length; i++) out += (i ? "," : "") + canonicalJson(value[i])
        return `${out}]`
      }
      if (value instanceof Date) return canonicalString(value.toISOString())
      // A boxed Number is how `parseToolArguments` keeps a float the text wrote as one (`1e16`).
      if (value instanceof Number) return pythonFloatRepr(value.valueOf())
      const withJson = value as { toJSON?: () => unknown }
      if (typeof withJson.toJSON === "function") return canonicalJson(withJson.toJSON())
      if (value instanceof Map || value instanceof Set) return canonicalString(String(value))
      return writeMembers(value as Record<string, unknown>, Object.keys(value))
    }
    default:
      // `default=str`: functions and symbols become their string form.
      return canonicalString(String(value))
  }
}

/**
 * `canonicalJson({ args, kwargs: rest })`, where `rest` holds `kwargs`' own members but those named in `omit` or
 * `omitKey`, written without building either object (the args fingerprint's preimage, on every call). An own
 * `__proto__` member is an argument like any other, as in Python's key.
 */
export function canonicalArgsJson(
  args: readonly unknown[],
  kwargs: Readonly<Record<string, unknown>>,
  omit: ReadonlySet<string>,
  omitKey: string | null | undefined,
): string {
  const keys: string[] = []
  for (const k of Object.keys(kwargs)) if (!omit.has(k) && k !== omitKey) keys.push(k)
  return `{"args":${canonicalJson(args)},"kwargs":${writeMembers(kwargs, keys)}}`
}

/**
 * The JSON value a stored row holds for `value` (Python's `json.dumps(default=str)` round trip): non-JSON values
 * become strings, `undefined` members disappear. Every backend stores exactly this, so replays look alike.
 * A `bigint` within 2^53 becomes a number; beyond it, its decimal string (JSON.stringify cannot write it).
 */
export function toJsonValue(value: unknown): JsonValue {
  return convert(value, false) as JsonValue
}

/**
 * `toJsonValue(value)` for the row, and the value the transition key hashes: the same unless `value` holds
 * what a row cannot carry exactly (a `bigint` beyond 2^53, a boxed-Number float from `parseToolArguments`).
 */
export function toStoredAndKeyed(value: unknown): { stored: JsonValue; keyed: unknown } {
  inexact = false
  const stored = convert(value, false) as JsonValue
  return { stored, keyed: inexact ? convert(value, true) : stored }
}

/**
 * `toStoredAndKeyed` for a call's arguments (a tool's or a task's). A cycle or nesting deeper than the stack gives a
 * bare RangeError from the recursive walk; the caller (often a model) gets the ledger's typed refusal instead, before
 * anything is claimed. No arguments are the original's `f()`, keyed as `{}`.
 */
export function argumentsStoredAndKeyed(args: unknown = {}): { stored: JsonValue; keyed: unknown } {
  plainOnly = true
  try {
    const out = toStoredAndKeyed(args)
    // Only an object names its arguments: a number or a string (or a toJSON() giving one) keyed as `{}`, so
    // charge(5000) replayed charge(100), and null broke the key with a bare TypeError.
    const s = out.stored
    if (s === null || typeof s !== "object" || Array.isArray(s)) throw notPlain(args)
    return out
  } catch (e) {
    if (e === refused) throw notPlain(e)
    if (!(e instanceof RangeError)) throw e
    throw new LedgerConfigError(
      "arguments with a cycle or too deep to hash: pass plain JSON (nothing was claimed)",
      {
        cause: e,
      },
    )
  } finally {
    plainOnly = false
    refused = null
  }
}

// Set by `convert` when the stored form loses what the key needs. Module state is safe: `convert` is synchronous
// and reset by its only reader just before; it costs no allocation on the hot path.
let inexact = false
// Arguments are keyed by what they hold: a Map, a Set or a class instance has no JSON form that says it (its own
// keys, or "[object Map]"), so two different ones keyed alike and a second payment replayed the first's result.
let plainOnly = false
// What `convert` met that is not plain: thrown as is (the error is made here, so that results and state, which share
// `convert`, do not carry it).
let refused: unknown = null

const notPlain = (value: unknown): LedgerConfigError =>
  new LedgerConfigError(
    `arguments hold a ${Array.isArray(value) ? "list" : ((value as object | null)?.constructor?.name ?? null)}: pass a plain object of JSON values (nothing was claimed)`,
  )

/** `exact`: keep bigints and boxed Numbers as they are, for `canonicalJson` to write exactly. */
function convert(value: unknown, exact: boolean): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value
    case "number":
      if (Number.isFinite(value)) return value
      // An argument: keyed as the string "Infinity" it matched a call passing that string (1e400 over HTTP replayed
      // another payment), and a row cannot hold it bare as the original keys it.
      if (plainOnly)
        throw new LedgerConfigError(`arguments hold ${value}: not a JSON number (nothing was claimed)`)
      return String(value)
    case "bigint":
      if (value >= MIN_SAFE && value <= MAX_SAFE) return Number(value)
      if (exact) return value
      inexact = true
      return value.toString()
    case "undefined":
      return null
    case "object": {
      if (value === null) return null
      if (Array.isArray(value)) {
        const out: unknown[] = new Array(value.length)
        for (let i = 0; i < value.length; i++) out[i] = convert(value[i], exact)
        return out
      }
      // An invalid Date is its time value, NaN, as a non-finite number (toISOString would throw a bare RangeError).
      if (value instanceof Date)
        return Number.isNaN(value.getTime()) ? convert(NaN, exact) : value.toISOString()
      if (value instanceof Number) {
        if (exact) return value
        inexact = true
        return convert(value.valueOf(), false)
      }
      const withJson = value as { toJSON?: () => unknown }
      if (typeof withJson.toJSON === "function") return convert(withJson.toJSON(), exact)
      if (plainOnly) {
        const proto = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null) {
          refused = value
          throw value
        }
      }
      if (value instanceof Map || value instanceof Set) return String(value)
      const out: { [key: string]: unknown } = {}
      const obj = value as Record<string, unknown>
      for (const k of Object.keys(obj)) {
        const v = obj[k]
        if (v === undefined) continue
        if (k === "__proto__") defineOwn(out, k, convert(v, exact))
        else out[k] = convert(v, exact)
      }
      return out
    }
    default:
      // A function or symbol argument keyed by its text: two closures alike in source, not in what they hold.
      if (plainOnly) {
        refused = value
        throw value
      }
      return String(value)
  }
}

const MAX_SAFE = /* @__PURE__ */ BigInt(Number.MAX_SAFE_INTEGER)
const MIN_SAFE = /* @__PURE__ */ BigInt(Number.MIN_SAFE_INTEGER)

/**
 * A deep copy of a stored JSON value. Replays hand each caller its own copy; for the small objects tools return
 * this is several times cheaper than structuredClone.
 */
export function cloneJson<T extends JsonValue>(value: T): T {
  if (value === null || typeof value !== "object") return value
  // A boxed Number (a float kept as one, see parseReceiptJson) is immutable: shared, not turned into `{}`.
  if ((value as object) instanceof Number) return value
  if (Array.isArray(value)) return value.map(cloneJson) as T
  const out: { [key: string]: JsonValue } = {}
  for (const k in value) {
    const v = cloneJson((value as { [key: string]: JsonValue })[k] as JsonValue)
    if (k === "__proto__") defineOwn(out, k, v)
    else out[k] = v
  }
  return out as T
}
