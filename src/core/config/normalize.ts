import type {
  ArgsDriftPolicy,
  RequestIdentityPolicy,
  ToolTransitionBindingInit,
  UnclassifiedPolicy,
} from "../ledger/index.ts"
import { parseSideEffectClass } from "../ledger/model/enums.ts"
import { DEFAULT_REQUEST_TIMEOUT } from "../storage/request-timeout.ts"
import { isAbsolutePath, normalizePath } from "../tools/paths.ts"
import { type ConfigEnv, expandEnv, pythonExpandVars, readEnvKey } from "./env.ts"
import { formatPath } from "./errors.ts"
import {
  type RawConfig,
  STORAGE_KEYS,
  type StorageConfig,
  type StorageKind,
  type ToolConfig,
} from "./schema.ts"
import { type ConfigSource, placeChoice } from "./source.ts"
import { storeUrlProblem, type UrlStoreKind } from "./store-url.ts"

/** A storage choice with its secrets resolved from the environment. */
export interface ResolvedStorage {
  readonly kind: StorageKind
  readonly path?: string
  readonly database?: string
  readonly binding?: string
  readonly url?: string
  readonly token?: string
  readonly dsn?: string
  readonly table?: string
  readonly prefix?: string
  readonly inFlightTtl?: number | null
  /** `python_lock` (file): also hold the original's flock on `<path>.lock`. */
  readonly pythonLock?: boolean
  /** `dispatch_lookup` (redis, upstash): `scan` when Python workers share the store. */
  readonly dispatchLookup?: "index" | "scan"
  /**
   * Seconds one request to a networked store (upstash, redis, postgres, neon) may take, or null for no limit; set
   * for those kinds only, with the default filled in.
   */
  readonly timeout?: number | null
}

/** A networked store's request limit when `timeout` is not set: redis keeps its adapter's, the others 30 s. */
const DEFAULT_TIMEOUT: Partial<Record<StorageKind, number>> = {
  upstash: DEFAULT_REQUEST_TIMEOUT,
  redis: 5,
  postgres: DEFAULT_REQUEST_TIMEOUT,
  neon: DEFAULT_REQUEST_TIMEOUT,
}

/**
 * The request limit a store factory applies: the choice's own, else the kind's default (a choice built by hand, as
 * the command line's `--postgres-dsn` builds one, gets the same limit as one read from mycelium.yaml).
 */
export function storageTimeout(choice: ResolvedStorage): number | null | undefined {
  return timeoutOf(choice.kind, choice.timeout)
}

const timeoutOf = (kind: StorageKind, timeout: number | null | undefined) =>
  timeout !== undefined ? timeout : DEFAULT_TIMEOUT[kind]

/** Ledger settings for one tool after inheritance (§6.4). */
export interface ResolvedLedger {
  readonly storage: ResolvedStorage
  readonly unclassifiedPolicy: UnclassifiedPolicy
  readonly onArgsDrift: ArgsDriftPolicy
  readonly requestIdentityPolicy: RequestIdentityPolicy
}

export interface ResolvedTool {
  readonly name: string
  readonly ledger: ResolvedLedger | null
  readonly binding: ToolTransitionBindingInit | null
  readonly auditReceipt: boolean
  readonly protect: { readonly entityParam?: string; readonly ttl?: number } | null
  readonly bounded: NonNullable<ToolConfig["bounded"]> | null
}

export interface ResolvedTask {
  readonly name: string
  readonly ledger: ResolvedStorage | null
  readonly idFrom: readonly string[]
  readonly auditReceipt: boolean
}

/** The transition section with the original's defaults filled in. */
export interface ResolvedTransition {
  readonly agentId: string
  readonly policyVersion: string
  readonly scopeFrom: Readonly<Partial<Record<"thread_id" | "run_id" | "node", string>>>
  readonly leaseTtl: number
  readonly leaseRenewInterval: number
  readonly pollInterval: number
  /** Seconds a call waits for another worker's; null for no limit (`poll_timeout: null` or `.inf`). */
  readonly pollTimeout: number | null
  readonly reclaimRequiresDeathSignal: boolean
  readonly presumedDeadAfter: number
}

/** Everything `mycelium.yaml` says, validated, inherited and with the profile's rules applied. */
export interface ResolvedConfig {
  readonly profile: "development" | "production"
  readonly transition: ResolvedTransition | null
  readonly tools: ReadonlyMap<string, ResolvedTool>
  readonly tasks: ReadonlyMap<string, ResolvedTask>
  /** The `task_ledger:` section's own storage (what `tasks: all` and `ledger: true` tasks use), or null. */
  readonly taskLedger: ResolvedStorage | null
  readonly raw: RawConfig
  /** Non-fatal findings (e.g. a side-effecting tool on a memory ledger in development). */
  readonly warnings: readonly string[]
  /** The audit-receipt signing key, resolved from `signing_key` or `signing_key_env`. */
  readonly signingKey: string | null
}

type Path = (string | number)[]

const LEDGER_KEYS_NOT_INHERITED = new Set(["tools", "tasks", "memory_storage_policy"])

/**
 * A tool's or task's `ledger: {…}`: the global settings with the mapping's keys over them, as the original merges
 * them. Inherited store keys that the mapping's own `storage:` does not take are dropped (the original ignores
 * them), and so is the other spelling of a key the mapping sets; the mapping's own keys are still checked.
 */
function mergeLedger(global: Record<string, unknown>, own: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...global, ...own }
  merged.storage ??= "memory"
  const kind = merged.storage as StorageKind
  for (const key of Object.keys(global)) {
    // The mapping's `url` (token, dsn) replaces an inherited `url_env`, as in the original, where the merged `url`
    // wins. Not the other way round: there the original keeps the inherited `url`, so both stay and are refused.
    const literal = key.endsWith("_env") && Object.hasOwn(own, key.slice(0, -4))
    if (
      !Object.hasOwn(own, key) &&
      Object.hasOwn(storageOnlyKeys, key) &&
      (literal || !STORAGE_KEYS[kind].includes(key))
    )
      delete merged[key]
  }
  return merged
}

function resolveStorage(
  cfg: StorageConfig,
  env: ConfigEnv,
  source: ConfigSource,
  path: Path,
  actionLedger = false,
): ResolvedStorage {
  const kind = cfg.storage
  refuseForeignKeys(cfg, Object.keys(storageOnlyKeys), source, path)
  // The action store names its index <table>_dispatch_idx, within Postgres's 63: refused here, with its line, rather
  // than by the store at its first call.
  if (actionLedger && cfg.table !== undefined && cfg.table.length > 50)
    throw source.error(
      `a table name of at most 50 characters for action_ledger (it appends _dispatch_idx), got ${cfg.table.length}`,
      [...path, "table"],
    )
  const pick = (direct: "url" | "token" | "dsn"): string | undefined => {
    const envKey = `${direct}_env` as const
    if (cfg[direct] !== undefined && cfg[envKey] !== undefined)
      throw source.error(`set '${direct}' or '${envKey}', not both`, [...path, envKey], true)
    // Where the original expands (storage/_helpers.py resolve_storage_url): url and dsn, and the value of their
    // `*_env` variable with os.path.expandvars. `token` (upstash, which the original lacks) expands as url does.
    const key = cfg[envKey] !== undefined ? envKey : direct
    const raw = cfg[key]
    if (raw === undefined) return undefined
    let v: string
    if (key === envKey) {
      v = readEnvKey(env, raw, source, [...path, envKey])
      if (direct !== "token") v = pythonExpandVars(v, env)
    } else v = expandEnv(raw, env, source, [...path, direct]) as string
    if (v === "") throw source.error(`'${direct}' is empty once its variables are expanded`, [...path, key])
    // node-postgres reads libpq's `host=… dbname=…` as a path under a host named 'base'; Neon's driver as no URL.
    if (direct === "dsn" && !/^(?:postgres(?:ql)?:\/\/|socket:|\/)/i.test(v))
      throw source.error(
        `not a postgres:// URL (libpq's key=value form is not read here): write postgres://user:password@host:5432/dbname`,
        [...path, key],
      )
    const problem = direct === "token" ? undefined : storeUrlProblem(kind as UrlStoreKind, v)
    if (problem)
      throw source.error(
        `${key === envKey ? `the value of environment variable '${raw}'` : `'${direct}'`} ${problem}`,
        [...path, key],
      )
    return v
  }
  const need = (key: string, value: unknown, hint: string): void => {
    if (value === undefined) throw source.error(`storage '${kind}' needs '${key}' (${hint})`, path)
  }
  const out: ResolvedStorage = {
    kind,
    ...(cfg.path !== undefined && { path: cfg.path }),
    ...(cfg.database !== undefined && { database: cfg.database }),
    ...(cfg.binding !== undefined && { binding: cfg.binding }),
    ...(cfg.table !== undefined && { table: cfg.table }),
    ...(cfg.prefix !== undefined && { prefix: cfg.prefix }),
    ...(cfg.in_flight_ttl !== undefined && { inFlightTtl: cfg.in_flight_ttl }),
    ...(cfg.dispatch_lookup !== undefined && { dispatchLookup: cfg.dispatch_lookup }),
    ...(cfg.python_lock !== undefined && { pythonLock: cfg.python_lock }),
  }
  const url = kind === "upstash" || kind === "redis" ? pick("url") : undefined
  const token = kind === "upstash" ? pick("token") : undefined
  const dsn = kind === "postgres" || kind === "neon" ? pick("dsn") : undefined
  if (kind === "file") need("path", cfg.path, "a file path, e.g. ./.mycelium/ledger.json")
  if (kind === "durable_object") need("binding", cfg.binding, "the Durable Object namespace binding name")
  if (kind === "upstash") {
    need("url", url, "'url' or 'url_env', e.g. url_env: UPSTASH_REDIS_REST_URL")
    need("token", token, "'token' or 'token_env', e.g. token_env: UPSTASH_REDIS_REST_TOKEN")
  }
  if (kind === "redis") need("url", url, "'url' or 'url_env', e.g. url_env: REDIS_URL")
  if (kind === "postgres" || kind === "neon")
    need("dsn", dsn, "'dsn' or 'dsn_env', e.g. dsn_env: DATABASE_URL")
  // The TCP connection's reply timer is its only guard against a server that stops answering.
  if (kind === "redis" && cfg.timeout === null)
    throw source.error(
      `storage 'redis' always has a reply timeout: set 'timeout' to seconds (default 5), not null`,
      [...path, "timeout"],
    )
  const timeout = timeoutOf(kind, cfg.timeout)
  const choice = {
    ...out,
    ...(url !== undefined && { url }),
    ...(token !== undefined && { token }),
    ...(dsn !== undefined && { dsn }),
    ...(timeout !== undefined && { timeout }),
  }
  return placeChoice(choice, source, path)
}

/** Keys of the action ledger's stores a task store has no use for: silently ignoring one would mislead. */
function refuseLedgerOnlyKeys(storage: ResolvedStorage | null, source: ConfigSource, path: Path): void {
  // Task stores keep no TTL (a task row outlives its lease) and run no args-drift check.
  if (storage?.inFlightTtl !== undefined)
    throw source.error(`'in_flight_ttl' does not apply to the task ledger (task rows never expire)`, [
      ...path,
      "in_flight_ttl",
    ])
  if (storage?.dispatchLookup !== undefined)
    throw source.error(`'dispatch_lookup' does not apply to the task ledger (it has no args-drift check)`, [
      ...path,
      "dispatch_lookup",
    ])
}

const storageOnlyKeys = {
  path: 1,
  database: 1,
  binding: 1,
  url: 1,
  url_env: 1,
  token: 1,
  token_env: 1,
  dsn: 1,
  dsn_env: 1,
  table: 1,
  prefix: 1,
  in_flight_ttl: 1,
  dispatch_lookup: 1,
  python_lock: 1,
  timeout: 1,
}

/**
 * A store key (of `keys`, those the section has) that its `storage` does not take is an error, in state_flush and
 * audit_receipt as in the ledgers: a `path:` without `storage: file` kept the rows in memory, lost at exit.
 */
function refuseForeignKeys(section: object, keys: string[], source: ConfigSource, path: Path): void {
  const values = section as Record<string, unknown>
  const kind = values.storage as StorageKind
  const takes = STORAGE_KEYS[kind].filter((k) => keys.includes(k))
  for (const key of Object.keys(values))
    if (keys.includes(key) && !takes.includes(key) && values[key] !== undefined)
      throw source.error(
        `'${key}' does not apply to storage '${kind}' (it takes: ${takes.join(", ") || "no keys"})`,
        [...path, key],
        true,
      )
}

const productionMessage = (field: string, value: string, required: string): string =>
  `profile is 'production' but '${field}' is '${value}'; production requires '${required}' and will not silently ` +
  `weaken to '${value}'. Remove '${field}' or set it to '${required}'.`

/**
 * Applies inheritance (§6.4) and the production profile (§6.5). Pure apart from reading `env`. `baseDir`: what a
 * relative store path is resolved against, to compare the stores' files.
 */
export function resolveConfig(
  raw: RawConfig,
  env: ConfigEnv,
  source: ConfigSource,
  baseDir?: string,
): ResolvedConfig {
  const production = raw.profile === "production"
  const warnings: string[] = []
  // Each file store's path, its kind and its section: two kinds on one file are refused at the end.
  const files: [string, string | undefined, Path][] = []
  const store = (what: string, cfg: unknown, path: Path, actionLedger?: boolean): ResolvedStorage => {
    const s = resolveStorage(cfg as StorageConfig, env, source, path, actionLedger)
    files.push([what, s.path, path])
    return s
  }
  const al = raw.action_ledger
  const check = <T extends string>(
    field: string,
    value: T | undefined,
    weak: T,
    strong: T,
    path: Path,
  ): T => {
    if (production && value === weak) throw source.error(productionMessage(field, weak, strong), path)
    return value ?? (production ? strong : weak)
  }
  const policies = {
    unclassifiedPolicy: check("unclassified_policy", al?.unclassified_policy, "warn", "strict", [
      "action_ledger",
      "unclassified_policy",
    ]),
    onArgsDrift: al?.on_args_drift ?? "soft",
    requestIdentityPolicy: check(
      "request_identity_policy",
      al?.request_identity_policy,
      "derived",
      "require_explicit",
      ["action_ledger", "request_identity_policy"],
    ),
  }
  const memoryPolicy = check("memory_storage_policy", al?.memory_storage_policy, "warn", "error", [
    "action_ledger",
    "memory_storage_policy",
  ])

  const t = raw.transition
  const transition: ResolvedTransition | null = t
    ? {
        agentId: t.agent_id,
        policyVersion: t.policy_version,
        scopeFrom: t.scope_from ?? {},
        leaseTtl: t.lease_ttl ?? 3600,
        leaseRenewInterval: t.lease_renew_interval ?? (t.lease_ttl ?? 3600) / 3,
        pollInterval: t.poll_interval ?? 0.05,
        pollTimeout:
          t.poll_timeout === undefined
            ? 300
            : t.poll_timeout === Number.POSITIVE_INFINITY
              ? null
              : t.poll_timeout,
        reclaimRequiresDeathSignal: t.reclaim_requires_death_signal,
        presumedDeadAfter: t.presumed_dead_after ?? 2 * (t.lease_ttl ?? 3600),
      }
    : null

  const globalLedger = (section: Record<string, unknown> | undefined): Record<string, unknown> => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(section ?? {})) if (!LEDGER_KEYS_NOT_INHERITED.has(k)) out[k] = v
    return out
  }
  // A Set per list: `includes` for every tool was quadratic in a file that lists thousands.
  const listOf = (list: "all" | string[] | undefined) => (list === "all" ? list : new Set(list))
  const toolList = listOf(al?.tools)
  const taskList = listOf(raw.task_ledger?.tasks)
  const listed = (list: "all" | Set<string>, name: string): boolean => list === "all" || list.has(name)

  // Names listed in action_ledger.tools but absent from tools: get an implicit bare tool config (§6.4).
  const toolEntries = new Map<string, ToolConfig>(Object.entries(raw.tools).map(([k, v]) => [k, v ?? {}]))
  if (Array.isArray(al?.tools)) for (const n of al.tools) if (!toolEntries.has(n)) toolEntries.set(n, {})

  const storages = new Map<string, ResolvedStorage>()
  // The global sections are checked even when no tool uses them yet: a broken section should fail at load.
  if (al)
    storages.set(
      JSON.stringify(globalLedger(al)),
      store("action ledger", globalLedger(al), ["action_ledger"], true),
    )
  const taskLedger = raw.task_ledger
    ? store("task ledger", globalLedger(raw.task_ledger), ["task_ledger"])
    : null
  refuseLedgerOnlyKeys(taskLedger, source, ["task_ledger"])
  const tools = new Map<string, ResolvedTool>()
  const memoryMutating: string[] = []
  for (const [name, tc] of toolEntries) {
    const path = ["tools", name]
    let ledgerCfg: Record<string, unknown> | null = null
    let ledgerPath: Path = ["action_ledger"]
    if (tc.ledger === true || (tc.ledger === undefined && listed(toolList, name))) {
      ledgerCfg = al ? globalLedger(al) : { storage: "memory" }
      ledgerPath = al ? ["action_ledger"] : [...path, "ledger"]
    } else if (tc.ledger && typeof tc.ledger === "object") {
      ledgerCfg = mergeLedger(globalLedger(al), tc.ledger)
      ledgerPath = [...path, "ledger"]
      // A tool's own mapping must not weaken what the production profile refuses in action_ledger.
      check("unclassified_policy", tc.ledger.unclassified_policy, "warn", "strict", [
        ...ledgerPath,
        "unclassified_policy",
      ])
      check("request_identity_policy", tc.ledger.request_identity_policy, "derived", "require_explicit", [
        ...ledgerPath,
        "request_identity_policy",
      ])
    } else if (tc.ledger === false && listed(toolList, name)) {
      // The original ledgers a listed tool whatever its own `ledger:` says: with one file, a Python worker would
      // ledger what this one runs bare.
      throw source.error(
        `tool '${name}' has ledger: false but action_ledger.tools ${al?.tools === "all" ? "is 'all'" : "lists it"}; ` +
          `the Python original ledgers it anyway. Remove it from action_ledger.tools or drop 'ledger: false'`,
        [...path, "ledger"],
      )
    }
    if (ledgerCfg && transition && tc.side_effect_class === undefined) {
      // A name only listed in action_ledger.tools has no entry under tools: point at the list's item.
      throw source.error(
        `tool '${name}' has ledger but no side_effect_class; required when 'transition' is configured`,
        Object.hasOwn(raw.tools, name)
          ? path
          : ["action_ledger", "tools", (al as { tools: string[] }).tools.indexOf(name)],
        true,
      )
    }
    if (!ledgerCfg && tc.side_effect_class !== undefined && !transition) {
      throw source.error(`side_effect_class needs a 'transition:' section (agent_id, policy_version)`, [
        ...path,
        "side_effect_class",
      ])
    }
    let ledger: ResolvedLedger | null = null
    if (ledgerCfg) {
      const key = JSON.stringify(ledgerCfg)
      const storage = storages.get(key) ?? store("action ledger", ledgerCfg, ledgerPath, true)
      storages.set(key, storage)
      ledger = {
        storage,
        unclassifiedPolicy:
          (ledgerCfg.unclassified_policy as UnclassifiedPolicy) ?? policies.unclassifiedPolicy,
        onArgsDrift: (ledgerCfg.on_args_drift as ArgsDriftPolicy) ?? policies.onArgsDrift,
        requestIdentityPolicy:
          (ledgerCfg.request_identity_policy as RequestIdentityPolicy) ?? policies.requestIdentityPolicy,
      }
    }
    const cls = tc.side_effect_class ? parseSideEffectClass(tc.side_effect_class) : null
    if (ledger?.storage.kind === "memory" && cls && cls !== "read") memoryMutating.push(`${name} (${cls})`)
    const binding: ToolTransitionBindingInit | null =
      transition && cls
        ? {
            agentId: transition.agentId,
            policyVersion: transition.policyVersion,
            sideEffectClass: cls,
            scopeFrom: transition.scopeFrom,
            ...(tc.retry_permission && { retryPermission: tc.retry_permission }),
            ...(tc.side_effect_boundary && { sideEffectBoundaryDefault: tc.side_effect_boundary }),
            ...(tc.spendability && { spendability: tc.spendability }),
            ...(tc.capability && { capability: tc.capability }),
            ...(tc.provider_idempotency_key_param && {
              providerIdempotencyKeyParam: tc.provider_idempotency_key_param,
            }),
            ...(tc.provider_idempotency_key_ttl && {
              providerIdempotencyKeyTtl: tc.provider_idempotency_key_ttl,
            }),
            ...(tc.request_id_from && { requestIdFrom: tc.request_id_from }),
          }
        : null
    const auditReceipt = tc.audit_receipt ?? (ledger !== null && (raw.audit_receipt?.auto ?? false))
    if (tc.audit_receipt && !raw.audit_receipt)
      throw source.error(`audit_receipt: true needs a top-level 'audit_receipt:' section`, [
        ...path,
        "audit_receipt",
      ])
    // Receipts are emitted by the ledger: without one the tool would sign nothing, silently (the original refuses it).
    if (tc.audit_receipt && ledger === null)
      throw source.error(`audit_receipt on tool '${name}' needs its ledger (ledger: true)`, [
        ...path,
        "audit_receipt",
      ])
    tools.set(name, {
      name,
      ledger,
      binding,
      auditReceipt,
      protect: tc.protect
        ? {
            ...(tc.protect.entity_param !== undefined && { entityParam: tc.protect.entity_param }),
            ...(tc.protect.ttl !== undefined && { ttl: tc.protect.ttl }),
          }
        : null,
      bounded: tc.bounded ?? null,
    })
  }
  if (memoryMutating.length) {
    const msg =
      `tool(s) ${memoryMutating.join(", ")} ${memoryMutating.length > 1 ? "are" : "is"} side-effecting but the ` +
      `action ledger uses memory storage, which forgets every row when the process exits`
    if (memoryPolicy === "error")
      throw source.error(
        `${msg}; memory_storage_policy is 'error'. Use a durable storage (file, redis, postgres, ...).`,
        ["action_ledger", "storage"],
      )
    if (transition) warnings.push(`${msg}. Use a durable storage before production.`)
  }

  const tl = raw.task_ledger
  const tasks = new Map<string, ResolvedTask>()
  const taskEntries = new Map(Object.entries(raw.tasks).map(([k, v]) => [k, v ?? {}]))
  if (Array.isArray(tl?.tasks)) for (const n of tl.tasks) if (!taskEntries.has(n)) taskEntries.set(n, {})
  for (const [name, tc] of taskEntries) {
    const path = ["tasks", name]
    let cfg: Record<string, unknown> | null = null
    let p: Path = ["task_ledger"]
    if (tc.ledger === true || (tc.ledger === undefined && (listed(taskList, name) || tc.id_from)))
      cfg = tl ? globalLedger(tl) : { storage: "memory" }
    else if (tc.ledger && typeof tc.ledger === "object") {
      cfg = mergeLedger(globalLedger(tl), tc.ledger)
      p = [...path, "ledger"]
    }
    if (tc.audit_receipt && !cfg)
      throw source.error(`audit_receipt on task '${name}' needs its ledger (ledger: true)`, [
        ...path,
        "audit_receipt",
      ])
    const storage = cfg ? store("task ledger", cfg, p) : null
    refuseLedgerOnlyKeys(storage, source, p)
    tasks.set(name, {
      name,
      ledger: storage,
      idFrom: tc.id_from ?? [],
      auditReceipt: tc.audit_receipt ?? (cfg !== null && (raw.audit_receipt?.auto ?? false)),
    })
  }

  let signingKey: string | null = null
  const ar = raw.audit_receipt
  if (ar) {
    refuseForeignKeys(ar, ["path", "database", "python_lock"], source, ["audit_receipt"])
    if (ar.signing_key !== undefined && ar.signing_key_env !== undefined)
      throw source.error(
        `set 'signing_key' or 'signing_key_env', not both`,
        ["audit_receipt", "signing_key_env"],
        true,
      )
    if (ar.signing_key_env !== undefined)
      signingKey = readEnvKey(env, ar.signing_key_env, source, ["audit_receipt", "signing_key_env"], true)
    else signingKey = ar.signing_key ?? null
    // Python's signing_key.encode() refuses an unpaired surrogate; UTF-8 here would sign with U+FFFD, another key.
    if (signingKey !== null && !signingKey.isWellFormed())
      throw source.error(
        "the signing key holds an unpaired surrogate, which UTF-8 cannot encode: use a key in valid Unicode",
        ["audit_receipt", ar.signing_key_env !== undefined ? "signing_key_env" : "signing_key"],
        true,
      )
    if (ar.storage === "file" && !ar.path)
      throw source.error(`storage 'file' needs 'path'`, ["audit_receipt"])
    if (production && ar.signing_key !== undefined)
      throw source.error(
        `profile is 'production' but the signing key is written in the file; use signing_key_env`,
        ["audit_receipt", "signing_key"],
        true,
      )
  }
  const sf = raw.state_flush
  if (sf?.storage === "file" && !sf.path) throw source.error(`storage 'file' needs 'path'`, ["state_flush"])
  if (sf?.storage === "durable_object" && !sf.binding)
    throw source.error(`storage 'durable_object' needs 'binding'`, ["state_flush"])
  if (sf) refuseForeignKeys(sf, ["path", "database", "binding", "python_lock"], source, ["state_flush"])
  // Tools may share an action ledger's file and tasks a task ledger's, but a task row in a ledger's file (or a
  // receipt, or a run's state) made every later call fail as a corrupt file, naming no key.
  files.push(["receipt store", ar?.path, ["audit_receipt"]], ["state flush", sf?.path, ["state_flush"]])
  const seen = new Map<string, [string, Path]>()
  for (const [what, file, path] of files) {
    if (file === undefined) continue
    const key = normalizePath(isAbsolutePath(file) ? file : `${baseDir ?? "/\0"}/${file}`)
    const first = seen.get(key) ?? [what, path]
    if (first[0] !== what) {
      // Refused at the later of the two in the text, naming the earlier.
      const place = ([w, p]: [string, Path]): [string, Path, number] => {
        const at = [...p, "path"]
        return [w, at, source.locate(at).line ?? 0]
      }
      let one = place(first)
      let two = place([what, path])
      if (one[2] > two[2]) [one, two] = [two, one]
      throw source.error(
        `the ${two[0]} is on the file of the ${one[0]} ('${formatPath(one[1])}', line ${one[2]}): give each its own path`,
        two[1],
      )
    }
    seen.set(key, first)
  }
  return { profile: raw.profile, transition, tools, tasks, taskLedger, raw, warnings, signingKey }
}
