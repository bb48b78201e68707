// The original reads mycelium.yaml with PyYAML (YAML 1.1) and str()s `transition.agent_id` and `policy_version`,
// which enter every transition key. YAML 1.2 (this package's parser) reads some plain scalars otherwise: `1.0` is the float 1.0 there
// ("1.0") and the number 1 here ("1"); `010` is octal there (8), `1e3` and `0o17` are strings there, `yes` is True.
// A version spelled that way must give the original's text, or a shared ledger keys every call twice.
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

/** Base-60 digits (`1:30` is 90), as PyYAML's int and float constructors read them. */
const sexagesimal = (parts: string[]): number => parts.reduce((acc, p) => acc * 60 + Number(p), 0)

/**
 * Python's `str()` of what PyYAML's safe_load makes of a plain (unquoted) scalar, or null where the original finds
 * no value (null, False, 0, 0.0: its `if not agent_id` / `if not policy_version` refuses them), or undefined where
 * PyYAML itself fails (a timestamp no date can hold). Other text is a string on both sides.
 */
export function pythonYamlStr(text: string): string | null | undefined {
  if (NULL.test(text)) return null
  if (BOOL.test(text)) return /^[yto]/i.test(text) && !/^off$/i.test(text) ? "True" : null
  if (FLOAT.test(text)) {
    const v = text.replace(/_/g, "").toLowerCase()
    const sign = v.startsWith("-") ? -1 : 1
    const body = v.replace(/^[-+]/, "")
    if (body === ".nan") return "nan"
    if (body === ".inf") return sign > 0 ? "inf" : "-inf"
    const x = sign * (body.includes(":") ? sexagesimal(body.split(":")) : Number(body))
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf"
    return x === 0 ? null : pythonFloatRepr(x)
  }
  if (INT.test(text)) {
    const v = text.replace(/_/g, "")
    const negative = v.startsWith("-")
    const body = v.replace(/^[-+]/, "")
    // 0b and 0x read as BigInt reads them; a leading 0 alone is octal; a colon base 60.
    const n = /^0[bx]/.test(body)
      ? BigInt(body)
      : body.includes(":")
        ? BigInt(sexagesimal(body.split(":")))
        : body.length > 1 && body.startsWith("0")
          ? BigInt(`0o${body.slice(1)}`)
          : BigInt(body)
    return n === 0n ? null : `${negative ? "-" : ""}${n}`
  }
  const ts = TIMESTAMP.exec(text)
  if (ts && (ts[4] || text.length === 10)) return pythonTimestamp(ts)
  return text
}
