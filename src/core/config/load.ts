import { en } from "zod/locales"
import type * as z from "zod/mini"
import type { ConfigEnv } from "./env.ts"
import type { ConfigError } from "./errors.ts"
import { refuseLiteralRefs } from "./literal-refs.ts"
import { MyceliumConfig, type MyceliumConfigOptions } from "./mycelium-config.ts"
import { resolveConfig } from "./normalize.ts"
import { configSchema, UNIMPLEMENTED_SECTIONS, UNIMPLEMENTED_TOOL_KEYS } from "./schema.ts"
import { type ConfigSource, parseConfigSource } from "./source.ts"

/** Options for {@link loadConfigFromString}. */
export interface LoadConfigOptions extends MyceliumConfigOptions {
  /** Variables for `$VAR` expansion and `*_env` keys. Default: none (the core cannot read a process's env). */
  env?: ConfigEnv
  /** File name used in error messages. Default `mycelium.yaml`. */
  source?: string
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v)

function rejectUnimplemented(doc: Record<string, unknown>, source: ConfigSource): void {
  for (const section of UNIMPLEMENTED_SECTIONS) {
    if (Object.hasOwn(doc, section))
      throw source.error(
        `section '${section}' is a guard of the Python original that mycelium-runtime does not implement; remove it ` +
          `(see docs/config.md for the sections this package reads)`,
        [section],
        true,
      )
  }
  for (const [kind, key] of [
    ["action_ledger", "storage"],
    ["task_ledger", "storage"],
  ] as const) {
    const s = doc[kind]
    if (isRecord(s) && s[key] === "sqlite")
      throw source.error(
        `storage 'sqlite' is not available in mycelium-runtime; use 'file', 'postgres' or 'redis'`,
        [kind, key],
      )
  }
  const tools = doc.tools
  if (!isRecord(tools)) return
  for (const [name, tc] of Object.entries(tools)) {
    if (!isRecord(tc)) continue
    for (const key of Object.keys(tc)) {
      // Own keys only: `constructor` or `toString` would read Object.prototype's function, and is an unknown key.
      const why = Object.hasOwn(UNIMPLEMENTED_TOOL_KEYS, key) ? UNIMPLEMENTED_TOOL_KEYS[key] : undefined
      if (why) throw source.error(`'${key}': ${why}`, ["tools", name, key], true)
    }
  }
}

// zod/mini loads no messages of its own ("Invalid input" for everything). The English ones are passed per parse, as the
// edge app does: a global z.config(en()) would change the messages of every zod schema in the application.
// reportInput: zod leaves `issue.input` out unless asked, and without it a key of the wrong type (`lease_ttl: soon`)
// read as a missing one.
const parseParams = { error: en().localeError, reportInput: true }

function issueToError(issue: z.core.$ZodIssue, source: ConfigSource): ConfigError {
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] as string
    const hint =
      issue.keys.length > 1
        ? ` (and ${issue.keys
            .slice(1)
            .map((k) => `'${k}'`)
            .join(", ")})`
        : ""
    return source.error(`unknown key '${key}'${hint}`, [...path, key], true)
  }
  if (issue.code === "invalid_type" && issue.input === undefined)
    return source.error(`missing required key '${String(path.at(-1))}'`, path)
  return source.error(issue.message, path)
}

/**
 * Reads `mycelium.yaml` text into a `MyceliumConfig`. Every problem is a `ConfigError` naming the key path, line
 * and column: unknown keys, wrong types, unset environment variables, sections this package does not implement,
 * production-profile violations.
 */
export function loadConfigFromString(text: string, options: LoadConfigOptions = {}): MyceliumConfig {
  const source = parseConfigSource(text, options.source)
  let doc = source.value
  if (doc === null || doc === undefined) doc = {}
  if (!isRecord(doc)) throw source.error("the document must be a mapping of sections (key: value)", [])
  rejectUnimplemented(doc, source)
  // Variables expand in `url`, `dsn` and `token` only (normalize.ts), where the original expands them: expanded
  // anywhere else (agent_id, policy_version, a tool's name or request_id_from), a value would differ from what a
  // Python worker reads in the same file, and the two would key one call differently. A `${VAR}` in a store or
  // receipt setting is refused instead of read as text (literal-refs.ts).
  const parsed = configSchema.safeParse(doc, parseParams)
  if (!parsed.success) {
    const first = parsed.error.issues[0] as z.core.$ZodIssue
    throw issueToError(first, source)
  }
  source.checkText(parsed.data)
  refuseLiteralRefs(parsed.data, source)
  const resolved = resolveConfig(parsed.data, options.env ?? {}, source, options.paths?.baseDir)
  return new MyceliumConfig(resolved, options, source)
}
