import { unboxNumber } from "../boxed-number.ts"
import { defineOwn } from "../own.ts"
import { SchemaBuildError } from "./errors.ts"

/** One field of the YAML field spec (reference §5.1). Unknown keys are ignored, as in the original. */
export interface FieldSpec {
  type?: "string" | "integer" | "number" | "boolean" | "array" | "object"
  required?: boolean
  /**
   * Unanchored search, like the original (`c\d+` accepts "xc1"); anchor with ^...$ (or pydantic's \A...\z) for a
   * full match. JavaScript syntax without the `u` flag; an escaped letter JavaScript would read as itself is refused.
   */
  pattern?: string
  min_length?: number
  max_length?: number
  items?: FieldSpec
  additional_properties?: FieldSpec | boolean
  [key: string]: unknown
}

/** A field spec: field name → spec, in declaration order. */
export type FieldSpecSchema = Record<string, FieldSpec>

/** The first failure, named with the original's (pydantic) error types. */
export interface FieldIssue {
  type: string
  path: string[]
  input: unknown
  expected: string
}

export type FieldResult = { ok: true; value: unknown } | { ok: false; issue: FieldIssue }

type Check = (value: unknown, path: string[]) => FieldResult

const TYPES = new Set(["string", "integer", "number", "boolean", "array", "object"])
const TRUE = new Set(["true", "1", "yes", "on", "t", "y"])
const FALSE = new Set(["false", "0", "no", "off", "f", "n"])

const fail = (type: string, path: string[], input: unknown, expected: string): FieldResult => ({
  ok: false,
  issue: { type, path, input, expected },
})

/** Compiles a field spec schema into a validator of an arguments object. Throws SchemaBuildError. */
export function compileFieldSpec(schema: FieldSpecSchema): {
  fields: string[]
  check: (args: Record<string, unknown>) => FieldResult
} {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new SchemaBuildError("schema must be a mapping of field name to field spec.")
  }
  const fields = Object.keys(schema)
  if (fields.length === 0) throw new SchemaBuildError("schema must define at least one field.")
  const checks = fields.map((name) => {
    const spec = schema[name]
    if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
      throw new SchemaBuildError(`${name}: field spec must be a mapping like {type: string}.`)
    }
    return { name, required: spec.required !== false, check: compileField(spec, name) }
  })
  return {
    fields,
    check(args) {
      // Checked on this one read: a getter read again could show the tool a value the check never saw.
      const out: Record<string, unknown> = { ...args }
      for (const { name, required, check } of checks) {
        // Own keys only: a field named toString or constructor that was left out is missing, not Object's member.
        const value = Object.hasOwn(out, name) ? out[name] : undefined
        if (value === undefined) {
          if (required) return fail("missing", [name], undefined, "a value for this field")
          continue
        }
        if (value === null && !required) continue
        const r = check(value, [name])
        if (!r.ok) return r
        defineOwn(out, name, r.value)
      }
      return { ok: true, value: out }
    },
  }
}

function compileField(spec: FieldSpec, path: string): Check {
  const type = spec.type ?? "string"
  if (typeof type !== "string" || !TYPES.has(type)) {
    throw new SchemaBuildError(
      `${path}: unknown type '${String(type)}'. Use one of ${[...TYPES].join(", ")}.`,
    )
  }
  if (spec.pattern !== undefined && type !== "string") {
    throw new SchemaBuildError(`${path}: pattern applies to string fields only.`)
  }
  if (
    (spec.min_length !== undefined || spec.max_length !== undefined) &&
    type !== "string" &&
    type !== "array"
  ) {
    throw new SchemaBuildError(`${path}: min_length/max_length apply to string or array fields only.`)
  }
  const base: Check =
    type === "string"
      ? stringCheck(spec, path)
      : type === "array"
        ? arrayCheck(spec, path)
        : type === "object"
          ? objectCheck(spec, path)
          : (SCALARS[type] as Check)
  return type === "array" ? withLength(base, spec, "too_short", "too_long") : base
}

function stringCheck(spec: FieldSpec, path: string): Check {
  let re: RegExp | undefined
  if (spec.pattern !== undefined) {
    if (typeof spec.pattern !== "string") throw new SchemaBuildError(`${path}: pattern must be a string.`)
    try {
      re = new RegExp(jsPattern(spec.pattern))
    } catch (e) {
      throw new SchemaBuildError(`${path}: invalid pattern '${spec.pattern}': ${(e as Error).message}`)
    }
  }
  const typed: Check = (v, p) => {
    if (typeof v !== "string") return fail("string_type", p, v, "string")
    return { ok: true, value: v }
  }
  const sized = withLength(typed, spec, "string_too_short", "string_too_long")
  if (!re) return sized
  // Length before pattern, as pydantic orders them: a model's 100 KB string never reaches a pattern that
  // backtracks (JavaScript regexes have no time limit) when max_length would refuse it anyway.
  return (v, p) => {
    const r = sized(v, p)
    if (!r.ok || re.test(v as string)) return r
    return fail("string_pattern_mismatch", p, v, `string matching pattern '${spec.pattern}'`)
  }
}

// pydantic's anchors \A, \z and \Z are identity escapes in a regex without `u` (the letters): `\A[a-z]+\z` took
// "x; rm -rf / Aabcz" and refused "abc". Outside a class they become ^ and $; any other escaped letter JS reads as
// itself (\q, \e) is refused, as pydantic refuses it. No `u` flag: it refuses patterns such as `[\w\-]`.
export const jsPattern = (pattern: string): string => {
  let inClass = false
  return pattern.replace(/\\(.)|[[\]]/gs, (m, c?: string) => {
    // Without `u` or `v`, "[" inside a class and "]" outside one are literals.
    if (!c) inClass = m === "["
    // A letter that is no escape JS knows (in a class, \B and the anchors are none either).
    else if (/[^\W\d_bdDsSwWfnrtvcxu]/.test(c) && (inClass || /[^BAzZ]/.test(c)))
      throw Error(`bad escape ${m}`)
    return (!inClass && ({ A: "^", z: "$", Z: "$" } as Record<string, string>)[c as string]) || m
  })
}

function withLength(check: Check, spec: FieldSpec, short: string, long: string): Check {
  const { min_length: min, max_length: max } = spec
  if (min === undefined && max === undefined) return check
  return (v, p) => {
    const r = check(v, p)
    if (!r.ok) return r
    // pydantic counts code points (an emoji is one, two UTF-16 units); iterating a string yields them, and copies
    // nothing, which [...s] would.
    let len = 0
    for (const _ of r.value as string | unknown[]) len++
    if (min !== undefined && len < min) return fail(short, p, v, `length of at least ${min}`)
    if (max !== undefined && len > max) return fail(long, p, v, `length of at most ${max}`)
    return r
  }
}

// Lax coercions mirror pydantic's lax mode, which the original relied on: "5" and 5.0 are integers.
const integerCheck: Check = (v, p) => {
  v = unboxNumber(v)
  // parseToolArguments' integer beyond 2^53: exact, as Python's int (a refusal told the model "Expected: integer").
  if (typeof v === "bigint") return { ok: true, value: v }
  if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 }
  if (typeof v === "number") {
    if (Number.isInteger(v)) return { ok: true, value: v }
    return fail(Number.isFinite(v) ? "int_from_float" : "finite_number", p, v, "integer")
  }
  if (typeof v === "string") {
    const t = v.trim()
    // "5.0" is an integer to pydantic, "5." is not.
    if (!/^[+-]?\d+(\.0+)?$/.test(t)) return fail("int_parsing", p, v, "integer")
    const n = Number(t)
    // "9007199254740993" would become 9007199254740992: another id. Python's int is exact; a double is not.
    if (!Number.isSafeInteger(n)) return fail("int_parsing_size", p, v, "integer within ±9007199254740991")
    return { ok: true, value: n }
  }
  return fail("int_type", p, v, "integer")
}

// Decimal text only: Number() also reads "0x10", "0b101" and "0o7", which pydantic refuses (float_parsing),
// so a model's "0x10" reached the tool as 16. No quantifier follows another over the same digits (`\d+\.?\d*`
// tried every split of a model's 80,000 digits before a stray "x": 13 s).
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i

const numberCheck: Check = (v, p) => {
  v = unboxNumber(v)
  if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 }
  // A bigint becomes the nearest double, as pydantic makes a Python int a float (one beyond them is float_type there).
  if (typeof v === "number" || (typeof v === "bigint" && Number.isFinite(Number(v))))
    return { ok: true, value: Number(v) }
  if (typeof v === "string") {
    const t = v.trim()
    return DECIMAL.test(t) ? { ok: true, value: Number(t) } : fail("float_parsing", p, v, "number")
  }
  return fail("float_type", p, v, "number")
}

const booleanCheck: Check = (v, p) => {
  if (typeof v === "boolean") return { ok: true, value: v }
  if (typeof v === "number") {
    if (v === 0 || v === 1) return { ok: true, value: v === 1 }
    return fail(Number.isInteger(v) ? "bool_parsing" : "bool_type", p, v, "boolean")
  }
  if (typeof v === "string") {
    const t = v.toLowerCase()
    if (TRUE.has(t)) return { ok: true, value: true }
    if (FALSE.has(t)) return { ok: true, value: false }
    return fail("bool_parsing", p, v, "boolean")
  }
  return fail("bool_type", p, v, "boolean")
}

const SCALARS: Record<string, Check> = { integer: integerCheck, number: numberCheck, boolean: booleanCheck }

function arrayCheck(spec: FieldSpec, path: string): Check {
  if (typeof spec.items !== "object" || spec.items === null) {
    throw new SchemaBuildError(`${path}: array requires items: {type: ...}.`)
  }
  const item = compileField(spec.items, `${path}[]`)
  const { max_length: max } = spec
  return (v, p) => {
    if (!Array.isArray(v)) return fail("list_type", p, v, "array")
    // Too long fails before any item is coerced: a two-million-item array costs no per-item work.
    if (max !== undefined && v.length > max) return fail("too_long", p, v, `length of at most ${max}`)
    const out: unknown[] = []
    for (const [i, el] of v.entries()) {
      const r = item(el, [...p, String(i)])
      if (!r.ok) return r
      out.push(r.value)
    }
    return { ok: true, value: out }
  }
}

function objectCheck(spec: FieldSpec, path: string): Check {
  const ap = spec.additional_properties
  // `false` would read as "no other keys" but nothing enforces it (the original refuses every non-mapping).
  if (ap !== undefined && ap !== true && (typeof ap !== "object" || ap === null)) {
    throw new SchemaBuildError(`${path}: additional_properties must be a field spec mapping.`)
  }
  const value = typeof ap === "object" ? compileField(ap, `${path}.*`) : undefined
  return (v, p) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return fail("dict_type", p, v, "object")
    if (!value) return { ok: true, value: v }
    const out: [string, unknown][] = []
    for (const [k, el] of Object.entries(v as Record<string, unknown>)) {
      const r = value(el, [...p, k])
      if (!r.ok) return r
      out.push([k, r.value])
    }
    // fromEntries defines own keys: `out[k] = ...` with k "__proto__" (JSON.parse makes it an own key) would
    // set the prototype instead, and the object's unchecked keys would be read through it.
    return { ok: true, value: Object.fromEntries(out) }
  }
}
