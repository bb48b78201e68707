// Which ledger an operator command talks to: direct store flags win, then the environment, then mycelium.yaml
// (with its `transition:` settings, which the Python CLI ignored), then the local default file.
import { existsSync } from "node:fs"
import { ConfigError } from "../core/config/errors.ts"
import type { MyceliumConfig, ResolvedStorage } from "../core/config/index.ts"
import { placeChoice } from "../core/config/source.ts"
import { ActionLedger, type ActionLedgerOptions, type LedgerStorage } from "../core/ledger/index.ts"
import type { ReceiptEmitter } from "../core/receipts/index.ts"
import { clean } from "../core/repr.ts"
import { UsageError } from "./errors.ts"
import { blank, DEFAULT_LEDGER, postgresDsn, redisUrl, requireRegularFile, tableFlag } from "./options.ts"

/** Flags every operator command accepts (parseArgs option specs). */
export const STORE_OPTIONS = {
  config: { type: "string", short: "c" },
  file: { type: "string" },
  ledger: { type: "string" },
  "redis-url": { type: "string" },
  "postgres-dsn": { type: "string" },
  table: { type: "string" },
  prefix: { type: "string" },
  "python-lock": { type: "boolean" },
} as const

export const STORE_HELP = `store (first that applies):
  --file PATH           a ledger file (env MYCELIUM_LEDGER_FILE) [--python-lock: Python workers use it now]
  --redis-url URL       redis:// or rediss:// (env MYCELIUM_REDIS_URL) [--prefix P]
  --postgres-dsn DSN    PostgreSQL (env MYCELIUM_POSTGRES_DSN) [--table T]
  -c, --config PATH     the action_ledger of mycelium.yaml (default ./mycelium.yaml when it exists)
  otherwise             ${DEFAULT_LEDGER}`

export interface StoreFlags {
  config?: string | undefined
  file?: string | undefined
  ledger?: string | undefined
  "redis-url"?: string | undefined
  "postgres-dsn"?: string | undefined
  table?: string | undefined
  prefix?: string | undefined
  "python-lock"?: boolean | undefined
}

export interface LedgerAccess {
  readonly ledger: ActionLedger
  /** Where the rows are, for messages. */
  readonly where: string
  readonly config: MyceliumConfig | null
  close(): Promise<void>
}

/**
 * A store variable: empty is unset (as MYCELIUM_TOKEN); blank is a usage error, as a blank store flag is, where
 * `MYCELIUM_LEDGER_FILE=" "` named a file " " and an operator's release went to a ledger no worker writes.
 */
export function storeVariable(name: string): string | undefined {
  const v = process.env[name]
  if (v && blank(v))
    throw new UsageError(`${name} is blank (an unset variable?): name the store, or unset it`)
  return v ? v : undefined
}

/** A store choice as messages print it, passwords hidden (`defaultTable`: the store's table when none is named). */
export function describeStore(s: ResolvedStorage, defaultTable = "mycelium_action_ledger"): string {
  if (s.kind === "file") return `file ${s.path}`
  if (s.kind === "redis" || s.kind === "upstash") return `${s.kind} ${redact(s.url ?? "")}`
  if (s.kind === "postgres" || s.kind === "neon")
    return `${s.kind} ${redact(s.dsn ?? "")} table ${s.table ?? defaultTable}`
  return s.kind
}

// Names a secret goes by in a URL's query or a key=value DSN (node-postgres and libpq read `?password=` too).
const SECRET_KEY = "password|passwd|pass|pwd|sslpassword|token|secret|api_?key"
const SECRET_PARAM = new RegExp(`^(?:${SECRET_KEY})$`, "i")
const SECRET_PAIR = new RegExp(`\\b(${SECRET_KEY})(\\s*=\\s*)('(?:[^'\\\\]|\\\\.)*'|[^\\s&]*)`, "gi")

/** Hides a URL's or DSN's password (userinfo, query parameter or `password=` pair) in anything printed. */
export function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = "***"
    for (const k of new Set(u.searchParams.keys())) if (SECRET_PARAM.test(k)) u.searchParams.set(k, "***")
    return u.toString()
  } catch {
    // Not a URL: a key=value DSN (`host=db password=x`), or a URL with a typo that still carries userinfo.
    return redactText(url)
  }
}

/** Hides every password in a text that may quote URLs or DSNs: a client's error often quotes the URL it refused. */
export function redactText(text: string): string {
  // A URL parser ends the userinfo at the authority's last '@' (`u:p@ss@host`): up to it, past the first.
  return text.replace(SECRET_PAIR, "$1$2***").replace(/(\/\/[^/:@\s]*:)[^@\s]*@(?:[^@\s/?#]*@)*/g, "$1***@")
}

/**
 * `v` as one shell word that names it exactly (an id, a store flag): as it is when it is plain, else single-quoted.
 * One holding a character clean() escapes (a control, a bidi or zero-width one) is a bash `$'..'` word:
 * single-quoted, clean() would show its tab as the text `\x09` or its U+202E as `\u202e`, and a pasted hint would
 * then name another id or file; this form holds none. Null when `v` holds NUL: no argv can carry one (bash ends a
 * `$'..'` word there), so any word would name its prefix, another row.
 */
export function shellQuote(v: string): string | null {
  if (v.includes("\0")) return null
  if (clean(v) !== v)
    return `$'${[...v]
      .map((c) =>
        c === "\\" || c === "'"
          ? `\\${c}`
          : clean(c) === c
            ? c
            : // As its UTF-8 bytes: bash's \u form depends on the locale.
              [...new TextEncoder().encode(c)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join(""),
      )
      .join("")}'`
  return /^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replaceAll("'", `'\\''`)}'`
}

/** A URL or DSN that carries a password (userinfo, a secret query parameter, a `password=` pair). */
function holdsSecret(v: string): boolean {
  try {
    const u = new URL(v)
    if (u.password || [...u.searchParams.keys()].some((k) => SECRET_PARAM.test(k))) return true
  } catch {
    // A key=value DSN: redactText() finds its pairs.
  }
  return redactText(v) !== v
}

/**
 * The store flags of a command line, for the commands a hint prints, so that pasted they act on the same store.
 * A URL or DSN holding a password is printed with `***` in its place (`hidden`) for the operator to fill in: a hint
 * ends up in terminals and logs, so it never carries the secret.
 */
export function storeFlagsText(flags: StoreFlags): { text: string; hidden: boolean } {
  let text = ""
  let hidden = false
  const add = (flag: string, v: string | undefined, secret = false): void => {
    if (v === undefined) return
    const hide = secret && holdsSecret(v)
    hidden ||= hide
    const q = shellQuote(hide ? redact(v) : v)
    if (q === null) throw new UsageError(`${flag} holds a NUL character, which no command line can pass`)
    // A value starting with '-' reads as a flag after a space: `--file=-x` keeps it a value.
    text += v.startsWith("-") ? ` ${flag === "-c" ? "--config" : flag}=${q}` : ` ${flag} ${q}`
  }
  add("-c", flags.config)
  add("--file", flags.file)
  add("--ledger", flags.ledger)
  add("--redis-url", flags["redis-url"], true)
  add("--postgres-dsn", flags["postgres-dsn"], true)
  add("--table", flags.table)
  add("--prefix", flags.prefix)
  if (flags["python-lock"]) text += " --python-lock"
  return { text, hidden }
}

/**
 * Refuses a store flag that would be dropped: two flags naming stores (the first won), or `--prefix` / `--table`
 * without the Redis / PostgreSQL store (`direct`, from a flag or variable) they qualify. Dropped, the command acted on
 * another store than the one named: `release ID --prefix staging: -c mycelium.yaml` settled the config's production
 * row of that id, whose payment a redispatch then ran again.
 */
export function refuseStrayStoreFlags(flags: StoreFlags, direct: ResolvedStorage | null): void {
  const named = (["file", "ledger", "redis-url", "postgres-dsn"] as const).filter(
    (f) => flags[f] !== undefined,
  )
  if (named.length > 1) throw new UsageError(`--${named[0]} and --${named[1]} each name a store: pass one`)
  for (const [flag, kind, flagName] of [
    ["prefix", "redis", "--redis-url"],
    ["table", "postgres", "--postgres-dsn"],
  ] as const)
    if (flags[flag] !== undefined && direct?.kind !== kind)
      throw new UsageError(
        `--${flag} goes with ${flagName} only; without it the command would act on another store (for the store ` +
          `of mycelium.yaml, set its ${flag} there)`,
      )
}

/**
 * A store the flag or variable `what` names: a store factory's error (a missing `pg`) names it, where one built by
 * hand would blame a mycelium.yaml that may not exist.
 */
export function namedBy(choice: ResolvedStorage, what: string): ResolvedStorage {
  const error = (detail: string) => new ConfigError(detail, { path: [] }, what)
  return placeChoice(choice, { value: null, name: what, locate: () => ({ path: [] }), error }, [])
}

function storeOf(
  file: string | undefined,
  redis: string | undefined,
  dsn: string | undefined,
  flags: StoreFlags,
  redisFrom: string,
  dsnWhat: string,
): ResolvedStorage | null {
  if (file) return { kind: "file", path: file, ...(flags["python-lock"] && { pythonLock: true }) }
  if (redis)
    return namedBy(
      {
        kind: "redis",
        url: redisUrl(redis, redisFrom),
        ...(flags.prefix !== undefined && { prefix: flags.prefix }),
      },
      redisFrom,
    )
  if (dsn)
    return namedBy(
      { kind: "postgres", dsn: postgresDsn(dsn, dsnWhat), ...tableFlag(flags.table, 50) },
      dsnWhat,
    )
  return null
}

/** What a command does with the ledger it opens. */
export interface OpenLedgerOptions {
  /**
   * Operator verdicts are signed like the workers' outcomes when the config signs receipts for any ledgered tool
   * (`audit_receipt:`): an audit trail that skipped the releases would not show who settled what.
   */
  readonly sign?: boolean
}

/**
 * The mycelium.yaml an operator command reads: `-c PATH`, else ./mycelium.yaml when it exists and no store is named
 * (`storeNamed`: by a flag or the environment). `mycelium serve` resolves it the same way, so both apply one policy.
 */
export function operatorConfigPath(config: string | undefined, storeNamed: boolean): string | undefined {
  return config ?? (!storeNamed && existsSync("mycelium.yaml") ? "mycelium.yaml" : undefined)
}

export async function loadOperatorConfig(path: string | undefined): Promise<MyceliumConfig | null> {
  if (!path) return null
  const { loadConfig } = await import("../node/config.ts")
  return loadConfig(path, { onWarning: () => {} })
}

/** The release and reclaim policy of operator commands (and `mycelium serve`): the config's `transition:` settings. */
export function releasePolicy(config: MyceliumConfig | null): {
  reclaimRequiresDeathSignal: boolean
  presumedDeadAfter?: number
} {
  const t = config?.transition
  return {
    // An operator at a terminal cannot see the worker: without a config, refuse releasing a lapsed lease whose
    // worker may still be alive (the original's CLI dropped this setting).
    reclaimRequiresDeathSignal: t?.reclaimRequiresDeathSignal ?? true,
    ...(t && { presumedDeadAfter: t.presumedDeadAfter }),
  }
}

/**
 * The emitter operator verdicts are signed with: the config's `audit_receipt:` when it signs any ledgered tool's
 * outcomes (an audit trail that skipped the releases would not show who settled what), else none.
 */
export async function signingReceipts(config: MyceliumConfig | null): Promise<ReceiptEmitter | null> {
  return config && [...config.tools.values()].some((t) => t.auditReceipt) ? config.receipts() : null
}

/**
 * The one store a config ledgers its tools on, or null when it ledgers none. `how`: what the command's flags let an
 * operator do about a config that ledgers on two.
 */
export function configuredStore(
  config: MyceliumConfig,
  configPath = "the config",
  how = "name one with --file, --redis-url or --postgres-dsn",
): ResolvedStorage | null {
  const ledgered = [...config.tools.values()].map((t) => t.ledger?.storage).filter((s) => s !== undefined)
  const distinct = new Map(ledgered.map((s) => [JSON.stringify(s), s]))
  if (distinct.size > 1)
    throw new UsageError(`${configPath} ledgers tools on ${distinct.size} different stores; ${how}`)
  return [...distinct.values()][0] ?? null
}

/**
 * The store the flags or the environment name, before any config (null: neither names one). A store flag, -c
 * included, beats every variable: an exported MYCELIUM_LEDGER_FILE must not point an operator's release at another
 * store than the one named. Among the variables, file, then Redis, then Postgres. `mycelium serve` takes its file by
 * these rules too, so it serves the rows `transitions` shows.
 */
export function directStore(flags: StoreFlags): ResolvedStorage | null {
  const fromFlags = storeOf(
    flags.file ?? flags.ledger,
    flags["redis-url"],
    flags["postgres-dsn"],
    flags,
    "--redis-url",
    "--postgres-dsn",
  )
  const direct =
    fromFlags ??
    (flags.config !== undefined
      ? null
      : storeOf(
          storeVariable("MYCELIUM_LEDGER_FILE"),
          storeVariable("MYCELIUM_REDIS_URL"),
          storeVariable("MYCELIUM_POSTGRES_DSN"),
          flags,
          "MYCELIUM_REDIS_URL",
          "MYCELIUM_POSTGRES_DSN",
        ))
  refuseStrayStoreFlags(flags, direct)
  // A lock that would silently not be taken is worse than none asked for.
  if (flags["python-lock"] && direct?.kind !== "file")
    throw new UsageError(
      "--python-lock applies to a ledger file (--file, --ledger or MYCELIUM_LEDGER_FILE); in mycelium.yaml set python_lock: true",
    )
  return direct
}

/** Opens the ledger the flags, environment or config name. */
export async function openLedger(
  flags: StoreFlags,
  extra: Partial<ActionLedgerOptions> = {},
  options: OpenLedgerOptions = {},
): Promise<LedgerAccess> {
  const { nodeStorageFactory } = await import("../node/config.ts")
  const direct = directStore(flags)
  const configPath = operatorConfigPath(flags.config, direct !== null)
  const config = await loadOperatorConfig(configPath)
  let choice = direct
  if (!choice && config) {
    choice = configuredStore(config, configPath)
    if (!choice)
      throw new UsageError(`${configPath} ledgers no tool: add action_ledger.tools, or pass --file`)
  }
  choice ??= { kind: "file", path: DEFAULT_LEDGER }
  if (choice.kind === "file" && choice.path) requireRegularFile(choice.path, "the ledger file")
  if (choice.kind === "memory")
    throw new UsageError(
      "the configured ledger is in memory: a command line cannot reach another process's memory",
    )
  // A missing signing key is the config's ConfigError (exit 2), before anything is written.
  const receipts = options.sign ? await signingReceipts(config) : null
  const storage: LedgerStorage = await nodeStorageFactory(choice)
  const t = config?.transition
  const ledger = new ActionLedger({
    storage,
    ...(receipts && { receipts }),
    onWarning: () => {},
    ...releasePolicy(config),
    ...(t && { leaseTtl: t.leaseTtl }),
    ...extra,
  })
  return {
    ledger,
    where: describeStore(choice),
    config,
    close: async () => {
      await storage.close?.()
    },
  }
}
