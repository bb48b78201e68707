import type { ConfigSource } from "./source.ts"

/** Environment variables as a plain map (the process environment in Node, `Deno.env.toObject()`, a Worker's `env` bindings). */
export type ConfigEnv = Readonly<Record<string, string | undefined>>

// A default's text: `$$` (a literal `$`, as outside it) or a `$` before no name and no `$` (so `$$$H` is not `$`,
// `$$`, `H`). A `$NAME` or `${` there does not expand (`${DB:-redis://$HOST/0}` was the address
// `redis://$HOST/0`), so it is refused, as any other `${` is.
const DEFAULT_TEXT = "(?:[^$}]|\\$\\$|\\$(?![{$A-Za-z_]))*"
// A `${` none of the forms before it match (`${H:=x}`, `${H-x}`, `${1X}`, a variable in a default) is last, refused.
const REF = /* @__PURE__ */ new RegExp(
  `\\$\\$|\\$\\{([A-Za-z_]\\w*)(?::-(${DEFAULT_TEXT}))?\\}|\\$([A-Za-z_]\\w*)|\\$\\{`,
  "g",
)
const DEFAULT_WITH_VARIABLE = /* @__PURE__ */ new RegExp(`^\\$\\{[A-Za-z_]\\w*:-${DEFAULT_TEXT}\\$[{A-Za-z_]`)

/**
 * A variable's text, or undefined: a name such as `constructor` or `__proto__` reads the object's prototype, and a
 * Worker's `env` also holds bindings (KV, Durable Objects) that are no text.
 */
export function envValue(env: ConfigEnv, name: string): string | undefined {
  const v = env[name]
  return typeof v === "string" ? v : undefined
}

/**
 * Expands `$VAR`, `${VAR}` and `${VAR:-default}` in every string value (`$$` is a literal `$`); any other `${` is
 * an error. Keys are never expanded. A variable that is not set and has no default is an error at that value's
 * line. The loader applies it to `url`, `dsn` and `token` only (load.ts says why).
 */
export function expandEnv(
  value: unknown,
  env: ConfigEnv,
  source: ConfigSource,
  path: (string | number)[] = [],
): unknown {
  if (typeof value === "string") {
    if (!value.includes("$")) return value
    return value.replace(REF, (whole, braced?: string, fallback?: string, bare?: string, at?: number) => {
      if (whole === "$$") return "$"
      // Not named: it may be part of a password.
      if (whole === "${")
        throw source.error(
          DEFAULT_WITH_VARIABLE.test(value.slice(at))
            ? `only \${VAR} and \${VAR:-default} expand, and a default holds no variable: write it out, or a '$' that is text as '$$'`
            : `only \${VAR} and \${VAR:-default} expand: write one, or a '$' that is text as '$$'`,
          path,
        )
      const key = (braced ?? bare) as string
      const v = envValue(env, key)
      if (v !== undefined && v !== "") return v
      if (fallback !== undefined) return fallback.replaceAll("$$", "$")
      // A `$` in a token, a key=value DSN, a URL's userinfo (up to its last '@') or its query (`?password=`) may be a
      // password's own: the name would print the rest of it. Named there only when it is the whole value.
      const name = String(path.at(-1))
      const hidden =
        name === "token" ||
        !value.includes("://") ||
        value.includes("@", at) ||
        /[?#]/.test(value.slice(0, at))
      const what =
        whole !== value && /^(?:token|url|dsn)$/.test(name) && hidden
          ? "a variable here is not set (not named: it may be part of a password)"
          : `environment variable '${key}' is not set (referenced as '${whole}')`
      throw source.error(`${what}; set it, or write a '$' that is text as '$$'`, path)
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, source, [...path, i]))
  if (value !== null && typeof value === "object")
    // fromEntries defines each key: an assignment `out["__proto__"] = v` would set the prototype instead.
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, source, [...path, k])]),
    )
  return value
}

// posixpath.expandvars' pattern (re.ASCII, as JavaScript's \w).
const PY_REF = /\$(\w+|\{[^}]*\})/g

/**
 * Python's `os.path.expandvars`, which the original applies to the value of a `url_env` / `dsn_env` variable:
 * `$NAME` and `${NAME}` of a set variable (empty included) are replaced, anything else stays as written.
 */
export function pythonExpandVars(value: string, env: ConfigEnv): string {
  if (!value.includes("$")) return value
  return value.replace(PY_REF, (whole, name: string) => {
    const v = envValue(env, name.startsWith("{") ? name.slice(1, -1) : name)
    return v ?? whole
  })
}

// What Python's str.strip() removes (str.isspace()): JavaScript's trim() also drops U+FEFF and keeps \x1c-\x1f, \x85.
const PY_SPACE_CLASS =
  "[\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+"
const PY_SPACE = /* @__PURE__ */ new RegExp(`^${PY_SPACE_CLASS}|${PY_SPACE_CLASS}$`, "g")

/** Python's `s.strip()`. */
export const pythonStrip = (s: string): string => s.replace(PY_SPACE, "")

/**
 * A `*_env` key: the name of a variable that must be set. `strip`: read it as the original reads a signing key
 * (`os.environ[name].strip()`), so a value with a trailing newline signs with the same key on both sides.
 */
export function readEnvKey(
  env: ConfigEnv,
  name: string,
  source: ConfigSource,
  path: (string | number)[],
  strip = false,
): string {
  const raw = envValue(env, name)
  const v = strip && raw !== undefined ? pythonStrip(raw) : raw
  if (v === undefined || v === "") throw source.error(`environment variable '${name}' is not set`, path)
  return v
}
