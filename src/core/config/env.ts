import type { ConfigSource } from "./source.ts"

/** Environment variables as a plain map (the process environment in Node, `Deno.env.toObject()`, a Worker's `env` bindings). */
export type ConfigEnv = Readonly<Record<string, string | undefined>>

const REF = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g

/**
 * Expands `$VAR`, `${VAR}` and `${VAR:-default}` in every string value (`$$` is a literal `$`). Keys are never
 * expanded. A variable that is not set and has no default is an error at that value's line.
 */
export function expandEnv(
  value: unknown,
  env: ConfigEnv,
  source: ConfigSource,
  path: (string | number)[] = [],
): unknown {
  if (typeof value === "string") {
    if (!value.includes("$")) return value
    return value.replace(REF, (whole, braced?: string, fallback?: string, bare?: string) => {
      if (whole === "$$") return "$"
      const key = (braced ?? bare) as string
      const v = env[key]
      if (v !== undefined && v !== "") return v
      if (fallback !== undefined) return fallback
      throw source.error(`environment variable '${key}' is not set (referenced as '${whole}')`, path)
    })
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, source, [...path, i]))
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = expandEnv(v, env, source, [...path, k])
    return out
  }
  return value
}

/** A `*_env` key: the name of a variable that must be set. */
export function readEnvKey(
  env: ConfigEnv,
  name: string,
  source: ConfigSource,
  path: (string | number)[],
): string {
  const v = env[name]
  if (v === undefined || v === "") throw source.error(`environment variable '${name}' is not set`, path)
  return v
}
