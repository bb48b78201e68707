import * as z from "zod/mini"
import { RetryPermission, SideEffectBoundary, Spendability, ToolCapability } from "../ledger/index.ts"
import { MAX_REQUEST_TIMEOUT } from "../storage/request-timeout.ts"

// The zod schema of mycelium.yaml. Every object is strict: a misspelt key is an error with its line and column,
// never silently ignored as in the Python original (reference §9). Keys stay snake_case, as in the original.
// zod/mini, not classic zod: classic schemas carry every method and do not tree-shake, and this schema is bundled
// into every application that reads mycelium.yaml (in a Worker too). zod/mini loads no messages: load.ts passes the
// English ones per parse.

/** Class names and the original's legacy aliases, accepted for `side_effect_class`. */
export const SIDE_EFFECT_CLASS_NAMES = [
  "read",
  "idempotent_mutate",
  "keyed_mutate",
  "non_idempotent_mutate",
  "irreversible",
  "read_only",
  "idempotent_write",
  "external_api_mutation",
  "non_idempotent_write",
  "payment",
  "email",
  "subagent",
  "onchain_action",
] as const

export const STORAGE_KINDS = [
  "memory",
  "file",
  "indexeddb",
  "durable_object",
  "upstash",
  "redis",
  "postgres",
  "neon",
] as const
export type StorageKind = (typeof STORAGE_KINDS)[number]

const positive = z.number().check(z.positive())
/**
 * The lease and poll timers' bound, in seconds. Past 2^31-1 ms (24.8 days) a JavaScript timer fires at once, so a
 * renew interval of years would renew in a loop; a lease longer than a year is a typo, not a setting.
 */
const MAX_TRANSITION_SECONDS = 31_536_000
const atMostAYear = z.lte(MAX_TRANSITION_SECONDS, "must be at most 31536000 seconds (a year)")
const name = z.string().check(z.minLength(1))
const names = z.array(name)
const toolList = z.union([z.literal("all"), names])
const nonNegativeInt = z.number().check(z.int(), z.gte(0))
const positiveInt = z.number().check(z.int(), z.positive())

/** Where rows live. Which keys apply depends on `storage` (checked in `storageKeysFor`). */
const storageFields = {
  storage: z._default(z.enum(STORAGE_KINDS), "memory"),
  path: z.optional(name),
  /** IndexedDB database name. */
  database: z.optional(name),
  /** Durable Object namespace binding name (Workers). */
  binding: z.optional(name),
  url: z.optional(name),
  url_env: z.optional(name),
  token: z.optional(name),
  token_env: z.optional(name),
  dsn: z.optional(name),
  dsn_env: z.optional(name),
  // The stores' own rule (tableName in the Neon adapters): a name they would refuse is refused here, with its line.
  table: z.optional(
    z.string().check(
      z.regex(
        /^[a-z][a-z0-9_]*$/,
        "a table name: lower-case letters, digits and underscores, starting with a letter",
      ),
      // Postgres cuts identifiers at 63 bytes (two names would share a table); the ledger's own limit is 50.
      z.maxLength(
        63,
        "a table name of at most 63 characters (50 for action_ledger: it appends _dispatch_idx)",
      ),
    ),
  ),
  prefix: z.optional(z.string()),
  // 0 and null both keep in-flight rows without a TTL. The original loads 0 too (its claim then falls back to 4x the
  // lease, docs/python-differences.md), so a file it reads must load here.
  in_flight_ttl: z.optional(z.nullable(z.number().check(z.gte(0)))),
  /** file: also hold the original's flock on `<path>.lock`, for a file Python workers write at the same time. */
  python_lock: z.optional(z.boolean()),
  /** How the args-drift check finds a tool-call id's rows on Redis: `scan` sees rows Python workers claimed too. */
  dispatch_lookup: z.optional(z.enum(["index", "scan"])),
  /** Seconds one store request may take before it fails as an outage; null for no limit (not for redis). */
  timeout: z.optional(z.nullable(z.number().check(z.positive(), z.lte(MAX_REQUEST_TIMEOUT)))),
}

/** The storage keys each kind accepts; anything else is an error naming the key. */
export const STORAGE_KEYS: Readonly<Record<StorageKind, readonly string[]>> = {
  memory: [],
  file: ["path", "python_lock"],
  indexeddb: ["database"],
  durable_object: ["binding"],
  upstash: ["url", "url_env", "token", "token_env", "prefix", "in_flight_ttl", "dispatch_lookup", "timeout"],
  redis: ["url", "url_env", "prefix", "in_flight_ttl", "dispatch_lookup", "timeout"],
  postgres: ["dsn", "dsn_env", "table", "timeout"],
  neon: ["dsn", "dsn_env", "table", "timeout"],
}

export const storageSchema = z.strictObject(storageFields)
export type StorageConfig = z.infer<typeof storageSchema>

const policies = {
  unclassified_policy: z.optional(z.enum(["warn", "strict"])),
  on_args_drift: z.optional(z.enum(["soft", "hard", "off"])),
  memory_storage_policy: z.optional(z.enum(["warn", "error"])),
  request_identity_policy: z.optional(z.enum(["derived", "require_explicit"])),
}

export const actionLedgerSchema = z.strictObject({
  ...storageFields,
  ...policies,
  tools: z.optional(toolList),
})
export const taskLedgerSchema = z.strictObject({ ...storageFields, tasks: z.optional(toolList) })

export const transitionSchema = z.strictObject({
  agent_id: name,
  // YAML numbers are stringified, as in the original (`policy_version: 2026.07` is a version, not a float).
  // Typed explicitly: inferred from String, the published declaration would carry an `any`.
  policy_version: z.union([name, z.pipe(z.number(), z.transform<number, string>(String))]),
  scope_from: z.optional(
    z.strictObject({ thread_id: z.optional(name), run_id: z.optional(name), node: z.optional(name) }),
  ),
  lease_ttl: z.optional(z.number().check(z.positive(), atMostAYear)),
  lease_renew_interval: z.optional(z.number().check(z.gte(0), atMostAYear)),
  poll_interval: z.optional(z.number().check(z.positive(), atMostAYear)),
  // null and .inf wait without a limit, as the original's None and float('inf') do.
  poll_timeout: z.optional(z.nullable(z.union([positive, z.literal(Number.POSITIVE_INFINITY)]))),
  reclaim_requires_death_signal: z._default(z.boolean(), true),
  presumed_dead_after: z.optional(positive),
})

const fieldSpec: z.ZodMiniType<Record<string, unknown>> = z.record(
  z.string(),
  z.record(z.string(), z.unknown()),
)

export const boundedSchema = z.strictObject({
  schema: z.optional(fieldSpec),
  output_schema: z.optional(fieldSpec),
  entity_param: z.optional(name),
  entity_pattern: z.optional(name),
  allowed_paths: z.optional(names),
  path_param: z.optional(name),
})

// A tool's or task's own `ledger:` mapping is merged over the global section, as the original merges it, so its
// `storage` has no default: a mapping that does not name one keeps the global store (it used to become memory).
const ownStorage = { storage: z.optional(z.enum(STORAGE_KINDS)) }

export const toolSchema = z.strictObject({
  // memory_storage_policy is read from action_ledger only, as in the original: here it would be silently ignored.
  ledger: z.optional(
    z.union([
      z.boolean(),
      z.extend(z.omit(actionLedgerSchema, { tools: true, memory_storage_policy: true }), ownStorage),
    ]),
  ),
  audit_receipt: z.optional(z.boolean()),
  side_effect_class: z.optional(z.enum(SIDE_EFFECT_CLASS_NAMES)),
  retry_permission: z.optional(z.enum(RetryPermission)),
  side_effect_boundary: z.optional(z.enum(SideEffectBoundary)),
  spendability: z.optional(z.enum(Spendability)),
  capability: z.optional(z.enum(ToolCapability)),
  provider_idempotency_key_param: z.optional(name),
  provider_idempotency_key_ttl: z.optional(positive),
  request_id_from: z.optional(name),
  protect: z.optional(z.strictObject({ entity_param: z.optional(name), ttl: z.optional(positive) })),
  bounded: z.optional(boundedSchema),
})
export type ToolConfig = z.infer<typeof toolSchema>

export const taskSchema = z.strictObject({
  ledger: z.optional(z.union([z.boolean(), z.extend(z.omit(taskLedgerSchema, { tasks: true }), ownStorage)])),
  id_from: z.optional(names),
  audit_receipt: z.optional(z.boolean()),
})

const flushReasons = z.enum(["cancel", "disconnect", "error"])

export const configSchema = z.strictObject({
  profile: z._default(z.enum(["development", "production"]), "development"),
  transition: z.optional(transitionSchema),
  action_ledger: z.optional(actionLedgerSchema),
  task_ledger: z.optional(taskLedgerSchema),
  tools: z._default(z.record(name, z.nullable(toolSchema)), {}),
  tasks: z._default(z.record(name, z.nullable(taskSchema)), {}),
  state_flush: z.optional(
    z.strictObject({
      storage: z._default(z.enum(["memory", "file", "indexeddb", "durable_object"]), "memory"),
      path: z.optional(name),
      database: z.optional(name),
      binding: z.optional(name),
      python_lock: z.optional(z.boolean()),
      // The original reads an empty list as unset (`flush_on or [...]`): it flushes on all three. One file must not
      // flush every ending in Python and none here.
      flush_on: z._default(
        z
          .array(flushReasons)
          .check(
            z.minLength(
              1,
              "an empty flush_on means all three endings to the Python original; list the endings to flush on (cancel, disconnect, error), or remove the key for all three",
            ),
          ),
        ["cancel", "disconnect", "error"],
      ),
      flush_on_complete: z._default(z.boolean(), true),
    }),
  ),
  audit_receipt: z.optional(
    z.strictObject({
      signing_key: z.optional(name),
      signing_key_env: z.optional(name),
      storage: z._default(z.enum(["memory", "file", "indexeddb"]), "memory"),
      path: z.optional(name),
      database: z.optional(name),
      python_lock: z.optional(z.boolean()),
      auto: z._default(z.boolean(), true),
    }),
  ),
  registry: z.optional(z.strictObject({ allowed: z.optional(names), auto: z.optional(z.boolean()) })),
  runner: z.optional(
    z.strictObject({
      max_llm_retries: z.optional(nonNegativeInt),
      max_tool_retries: z.optional(nonNegativeInt),
    }),
  ),
  history_guard: z.optional(
    z.strictObject({
      max_tokens: z.optional(positiveInt),
      max_messages: z.optional(positiveInt),
      warn_at: z.optional(z.number().check(z.gt(0), z.lte(1))),
      detect_duplicates: z.optional(z.union([z.boolean(), z.enum(["consecutive", "anywhere"])])),
      // Not the original's (it never checks drops in prepare_messages): false gives its behaviour.
      detect_drops: z.optional(z.boolean()),
    }),
  ),
  message_validator: z.optional(
    z.union([z.boolean(), z.strictObject({ enabled: z._default(z.boolean(), true) })]),
  ),
})

/** The document as validated, before inheritance and profile rules are applied. */
export type RawConfig = z.output<typeof configSchema>

/** Sections of the Python original that this package does not implement: named, never silently ignored. */
export const UNIMPLEMENTED_SECTIONS = [
  "integrations",
  "deployment",
  "verify",
  "outcome_emit",
  "loop_guard",
  "budget",
  "scope_guard",
  "completion",
  "state_authority",
  "secret_args",
  "entity_guard",
  "destructive_confirm",
  "authority_window",
  "use_time_currency",
] as const

/** Per-tool keys of the original that have no TypeScript meaning or no implementation here. */
export const UNIMPLEMENTED_TOOL_KEYS: Readonly<Record<string, string>> = {
  callable:
    "TypeScript has no import paths to resolve: pass the functions to config.instrument({ name: fn }) instead",
  loop_guard: "loop_guard is not implemented by mycelium-runtime",
  budget_guard: "budget_guard is not implemented by mycelium-runtime",
  scope_guard: "scope_guard is not implemented by mycelium-runtime",
  state_authority: "state_authority is not implemented by mycelium-runtime",
  secret_fields: "secret_args is not implemented by mycelium-runtime",
  secret_args: "secret_args is not implemented by mycelium-runtime",
  entity_guard: "entity_guard is not implemented by mycelium-runtime",
  destructive_confirm: "destructive_confirm is not implemented by mycelium-runtime",
  use_time_currency: "use_time_currency is not implemented by mycelium-runtime",
}
