import type { RawConfig } from "./schema.ts"
import type { ConfigSource } from "./source.ts"

type Path = (string | number)[]

// `${NAME}` and the shell's `${NAME:-x}`, `${NAME-x}`, `${NAME:=x}`, ... forms: never text anyone means literally.
const BRACED = /\$\{[A-Za-z_]\w*(?:\}|:?[-=?+][^}]*\}?)/
// Bare `$NAME` too, where a `$` before a name is no plausible text: a file path, a signing key (this one is for
// development only, and signing_key_env takes any key).
const ANY = new RegExp(`${BRACED.source}|\\$[A-Za-z_]\\w*`)
const WHOLE = /^\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))$/

// Store and receipt settings, which the loader does not expand (the original reads them as written either). Before
// a6e9083 every string expanded: `path: ${DATA_DIR}/ledger.json` now names a relative directory `${DATA_DIR}`, so
// workers started in different directories keep different ledgers, and `signing_key: ${KEY}` signs with that public
// text. Such a value is refused rather than read. Identity keys (agent_id, policy_version, tool names,
// request_id_from, scope_from) are not checked: the original keys them as written, and so must a shared ledger.
const STORAGE_KEYS: Record<string, RegExp> = {
  path: ANY,
  database: BRACED,
  binding: BRACED,
  prefix: BRACED,
  url_env: BRACED,
  token_env: BRACED,
  dsn_env: BRACED,
}
const RECEIPT_KEYS: Record<string, RegExp> = {
  signing_key: ANY,
  signing_key_env: BRACED,
  path: ANY,
  database: BRACED,
}
const FLUSH_KEYS: Record<string, RegExp> = { path: ANY, database: BRACED, binding: BRACED }

function hint(key: string, value: string): string {
  if (key === "signing_key") {
    const m = WHOLE.exec(value)
    return `put the key in an environment variable and name it in signing_key_env${m ? `: signing_key_env: ${m[1] ?? m[2]}` : ""}`
  }
  if (key === "path")
    return "write the path out in full (an absolute path, so every worker opens the same file)"
  if (key.endsWith("_env")) return `'${key}' takes the variable's name itself, e.g. ${key}: NAME`
  return "write the value out"
}

function check(
  section: object | null | undefined,
  keys: Record<string, RegExp>,
  path: Path,
  source: ConfigSource,
): void {
  if (!section) return
  for (const [key, value] of Object.entries(section)) {
    const re = Object.hasOwn(keys, key) ? keys[key] : undefined
    const m = re && typeof value === "string" ? re.exec(value) : null
    if (!m) continue
    // A signing key's text is a secret: name the reference only when it is the whole value.
    const what = key === "signing_key" && !WHOLE.test(value) ? "a variable reference" : `'${m[0]}'`
    throw source.error(
      `${what} is not expanded here: variables expand only in url, dsn and token, and ` +
        `'${key}' would be used as the text written; ${hint(key, value)}`,
      [...path, key],
    )
  }
}

/** Refuses a variable reference in a store or receipt setting, where it would be read as text (see above). */
export function refuseLiteralRefs(raw: RawConfig, source: ConfigSource): void {
  check(raw.action_ledger, STORAGE_KEYS, ["action_ledger"], source)
  check(raw.task_ledger, STORAGE_KEYS, ["task_ledger"], source)
  for (const [section, entries] of [
    ["tools", raw.tools],
    ["tasks", raw.tasks],
  ] as const)
    for (const [name, entry] of Object.entries(entries)) {
      const ledger = entry?.ledger
      if (ledger && typeof ledger === "object") check(ledger, STORAGE_KEYS, [section, name, "ledger"], source)
    }
  check(raw.audit_receipt, RECEIPT_KEYS, ["audit_receipt"], source)
  check(raw.state_flush, FLUSH_KEYS, ["state_flush"], source)
}
