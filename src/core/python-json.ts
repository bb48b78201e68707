// Python's json.dumps with its default separators (", " and ": "), ASCII escapes and float repr. The original
// writes its receipt lines this way and hashes task arguments this way (with sort_keys).
import { canonicalString, pythonFloatRepr } from "./ledger/model/canonical.ts"

export interface PythonDumpsOptions {
  /** `sort_keys=True` (code-unit order, as canonicalJson sorts ASCII keys). */
  readonly sortKeys?: boolean
}

/** A JS number as Python prints it: safe integers as ints, everything else (and -0) as a float. */
export function pythonNumber(x: number): string {
  return Number.isSafeInteger(x) && !Object.is(x, -0) ? String(x) : pythonFloatRepr(x)
}

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
        if (Array.isArray(v)) return `[${v.map(write).join(", ")}]`
        const withJson = v as { toJSON?: () => unknown }
        if (typeof withJson.toJSON === "function") return write(withJson.toJSON())
        const entries = Object.entries(v).filter(([, x]) => x !== undefined)
        if (options.sortKeys) entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        return `{${entries.map(([k, x]) => `${canonicalString(k)}: ${write(x)}`).join(", ")}}`
      }
      default:
        return canonicalString(String(v))
    }
  }
  return write(value)
}
