// The original reads mycelium.yaml with PyYAML (YAML 1.1) and str()s `transition.agent_id` and `policy_version`,
// which enter every transition key. YAML 1.2 (this package's parser) reads some plain scalars otherwise: `1.0` is the
// float 1.0 there ("1.0") and the number 1 here ("1"); `010` is octal there (8), `1e3` and `0o17` are strings there,
// `yes` is True. A version spelled that way must give the original's text, or a shared ledger keys every call twice.
import { pythonFloatRepr } from "../ledger/model/canonical.ts"

// PyYAML's implicit resolvers (yaml/resolver.py), in its order of precedence.
const BOOL = /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/
const FLOAT =
  /^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/
const INT =
  /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/
const NULL = /^(?:~|null|Null|NULL|)$/
// The timestamp constructor's pattern. Its resolver also wants a two-digit month and day when there is no time.
const TIMESTAMP =
  /^(\d{4})-(\d\d?)-(\d\d?)(?:(?:[Tt]|[ \t]+)(\d\d?):(\d\d):(\d\d)(?:\.(\d*))?(?:[ \t]*(Z|([-+])(\d\d?)(?::(\d\d))?))?)?$/

const pad = (n: unknown): string => `${n}`.padStart(2, "0")
// The timestamp resolver's match: a time, or else a date with a two-digit month and day.
function stamp(text: string): RegExpExecArray | null {
  const ts = TIMESTAMP.exec(text)
  return ts && (ts[4] || text.length === 10) ? ts : null
}

/**
 * str() of the date or datetime PyYAML (5.3 and later) builds: `2026-07-01T12:00:00Z` is `2026-07-01 12:00:00+00:00`.
 * undefined where Python's constructor raises (`2026-02-30`, hour 24, an offset of a day or more).
 */
function pythonTimestamp(m: RegExpExecArray): string | undefined {
  const [, y, mo, d, h, mi, s, fraction = "", tz, sign, th, tm = 0] = m
  const t = new Date(0)
  t.setUTCFullYear(Number(y), Number(mo) - 1, Number(d))
  let text = `${y}-${pad(mo)}-${pad(d)}`
  if (h) {
    t.setUTCHours(Number(h), Number(mi), Number(s))
    text += ` ${pad(h)}:${mi}:${s}`
  }
  // A field out of range moves the Date (February 30 is March 2), where Python refuses the value.
  if (!Number(y) || t.toISOString().slice(0, text.length).replace("T", " ") !== text) return undefined
  if (!h) return text
  const micro = fraction.slice(0, 6).padEnd(6, "0")
  const offset = Number(th) * 60 + Number(tm)
  if (offset > 1439) return undefined
  const zone = sign
    ? `${sign === "-" && offset ? "-" : "+"}${pad((offset / 60) | 0)}:${pad(offset % 60)}`
    : tz
      ? "+00:00"
      : ""
  return `${text}${Number(micro) ? `.${micro}` : ""}${zone}`
}

/** A value as PyYAML's safe_load builds it: an int is a bigint, a float a number (a timestamp is its str()). */
export type PythonValue = string | number | bigint | boolean | null

const DIGITS: Record<number, RegExp> = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^\d+$/, 16: /^[\da-f]+$/i }
const PREFIX: Record<number, string> = { 2: "0b", 8: "0o", 16: "0x" }

/** Python's `int(s, base)`, or undefined where it raises. */
function pyInt(s: string, base: number): bigint | undefined {
  let t = s.trim()
  const negative = t[0] === "-"
  if (/^[-+]/.test(t)) t = t.slice(1)
  const prefix = PREFIX[base]
  if (prefix && t.toLowerCase().startsWith(prefix)) t = t.slice(2)
  if (!DIGITS[base]?.test(t)) return undefined
  const n = BigInt(prefix ? prefix + t : t)
  return negative ? -n : n
}

/** Python's `float(s)` of a lower-case text, or undefined where it raises. */
const pyFloat = (s: string): number | undefined =>
  /^\s*[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|inf(?:inity)?|nan)\s*$/.test(s)
    ? Number(s.replace(/inf(?:inity)?/, "Infinity"))
    : undefined

/** Base-60 digits (`1:30` is 90), as PyYAML's int and float constructors read them; undefined if one fails. */
function base60<T extends number | bigint>(parts: (T | undefined)[], sixty: T): T | undefined {
  let acc: T | undefined
  for (const p of parts) {
    if (p === undefined) return undefined
    acc = (acc === undefined ? p : (acc as number) * (sixty as number) + (p as number)) as T
  }
  return acc
}

/**
 * What PyYAML's safe_load makes of a scalar: with `tag` (str, int, float, bool, null), its constructor for that tag;
 * without, the tag its implicit resolvers give a plain scalar. undefined where PyYAML raises (`0b_`, `!!int 1.5`,
 * `=`, a timestamp no date can hold).
 */
export function pythonValue(text: string, explicit?: string): PythonValue | undefined {
  const tag =
    explicit ??
    (NULL.test(text)
      ? "null"
      : BOOL.test(text)
        ? "bool"
        : FLOAT.test(text)
          ? "float"
          : INT.test(text)
            ? "int"
            : // PyYAML's !!value, which safe_load has no constructor for: read below as an int, it fails as there.
              text === "="
              ? "value"
              : "")
  const ts = tag ? null : stamp(text)
  if (ts) return pythonTimestamp(ts)
  if (tag === "null") return null
  if (tag === "bool")
    return /^(?:yes|true|on)$/i.test(text) ? true : /^(?:no|false|off)$/i.test(text) ? false : undefined
  if (!tag || tag === "str") return text
  let v = text.replace(/_/g, "")
  if (tag === "float") v = v.toLowerCase()
  const sign = v[0] === "-" ? -1 : 1
  if (/^[-+]/.test(v)) v = v.slice(1)
  if (tag === "float") {
    if (v === ".inf") return sign * Number.POSITIVE_INFINITY
    if (v === ".nan") return Number.NaN
    const x = base60(v.split(":").map(pyFloat), 60)
    return x === undefined ? x : sign * x
  }
  // int: 0b and 0x, then a leading 0 as octal, then base 60, then decimal (PyYAML's construct_yaml_int).
  const base = v.startsWith("0b") ? 2 : v.startsWith("0x") ? 16 : v === "0" ? 10 : v[0] === "0" ? 8 : 10
  const n =
    base === 10 && v.includes(":")
      ? base60(
          v.split(":").map((p) => pyInt(p, 10)),
          60n,
        )
      : pyInt(base === 2 || base === 16 ? v.slice(2) : v, base)
  return n === undefined ? n : sign < 0 ? -n : n
}

/**
 * Python's `str()` of a value PyYAML built, or null where the original finds no value (None, False, 0, 0.0: its
 * `if not agent_id` / `if not policy_version` refuses them), or undefined where PyYAML failed.
 */
export function pythonStr(v: PythonValue | undefined): string | null | undefined {
  // repr() writes inf and nan where JSON's Infinity and NaN are; NaN is a value there (it is true).
  if (typeof v === "number")
    return v === 0 ? null : pythonFloatRepr(v).replace(/Infinity|NaN/, (m) => m.slice(0, 3).toLowerCase())
  if (v === true) return "True"
  return v === undefined ? v : v ? `${v}` : null
}

/** Python's `str()` of what PyYAML's safe_load makes of a plain (unquoted) scalar (see pythonValue, pythonStr). */
export const pythonYamlStr = (text: string): string | null | undefined => pythonStr(pythonValue(text))

/** Whether PyYAML reads a plain scalar as the str it spells: no resolver takes it (a timestamp is a date there). */
export const pythonText = (text: string): boolean => pythonValue(text) === text && !stamp(text)
