import * as z from "zod"
import { RetryPermission, SideEffectBoundary, Spendability, ToolCapability } from "../ledger/index.ts"

// The zod schema of mycelium.yaml. Every object is strict: a misspelt key is an error with its line and column,
// never silently ignored as in the Python original (reference §9). Keys stay snake_case, as in the original.

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

const positive = z.number().positive()
const name = z.string().min(1)
const names = z.array(name)
const toolList = z.union([z.literal("all"), names])

/** Where rows live. Which keys apply depends on `storage` (checked in `storageKeysFor`). */
const storageFields = {
  storage: z.enum(STORAGE_KINDS).default("memory"),
  path: name.optional(),
  /** IndexedDB database name. */
  database: name.optional(),
  /** Durable Object namespace binding name (Workers). */
  binding: name.optional(),
  url: name.optional(),
  url_env: name.optional(),
  token: name.optional(),
  token_env: name.optional(),
  dsn: name.optional(),
  dsn_env: name.optional(),
  table: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a SQL identifier (letters, digits, underscore)")
    .optional(),
  prefix: z.string().optional(),
  in_flight_ttl: positive.nullable().optional(),
}

/** The storage keys each kind accepts; anything else is an error naming the key. */
export const STORAGE_KEYS: Readonly<Record<StorageKind, readonly string[]>> = {
  memory: [],
  file: ["path"],
  indexeddb: ["database"],
  durable_object: ["binding"],
  upstash: ["url", "url_env", "token", "token_env", "prefix", "in_flight_ttl"],
  redis: ["url", "url_env", "prefix", "in_flight_ttl"],
  postgres: ["dsn", "dsn_env", "table"],
  neon: ["dsn", "dsn_env", "table"],
}

export const storageSchema = z.strictObject(storageFields)
export type StorageConfig = z.infer<typeof storageSchema>

const policies = {
  unclassified_policy: z.enum(["warn", "strict"]).optional(),
  on_args_drift: z.enum(["soft", "hard", "off"]).optional(),
  memory_storage_policy: z.enum(["warn", "error"]).optional(),
  request_identity_policy: z.enum(["derived", "require_explicit"]).optional(),
}

export const actionLedgerSchema = z.strictObject({
  ...storageFields,
  ...policies,
  tools: toolList.optional(),
})
export const taskLedgerSchema = z.strictObject({ ...storageFields, tasks: toolList.optional() })

export const transitionSchema = z.strictObject({
  agent_id: name,
  // YAML numbers are stringified, as in the original (`policy_version: 2026.07` is a version, not a float).
  policy_version: z.union([name, z.number().transform(String)]),
  scope_from: z
    .strictObject({ thread_id: name.optional(), run_id: name.optional(), node: name.optional() })
    .optional(),
  lease_ttl: positive.optional(),
  lease_renew_interval: z.number().min(0).optional(),
  poll_interval: positive.optional(),
  poll_timeout: positive.optional(),
  reclaim_requires_death_signal: z.boolean().default(true),
  presumed_dead_after: positive.optional(),
})

const fieldSpec: z.ZodType<Record<string, unknown>> = z.record(z.string(), z.record(z.string(), z.unknown()))

export const boundedSchema = z.strictObject({
  schema: fieldSpec.optional(),
  output_schema: fieldSpec.optional(),
  entity_param: name.optional(),
  entity_pattern: name.optional(),
  allowed_paths: names.optional(),
  path_param: name.optional(),
})

export const toolSchema = z.strictObject({
  ledger: z.union([z.boolean(), actionLedgerSchema.omit({ tools: true })]).optional(),
  audit_receipt: z.boolean().optional(),
  side_effect_class: z.enum(SIDE_EFFECT_CLASS_NAMES).optional(),
  retry_permission: z
    .enum(Object.values(RetryPermission) as [RetryPermission, ...RetryPermission[]])
    .optional(),
  side_effect_boundary: z
    .enum(Object.values(SideEffectBoundary) as [SideEffectBoundary, ...SideEffectBoundary[]])
    .optional(),
  spendability: z.enum(Object.values(Spendability) as [Spendability, ...Spendability[]]).optional(),
  capability: z.enum(Object.values(ToolCapability) as [ToolCapability, ...ToolCapability[]]).optional(),
  provider_idempotency_key_param: name.optional(),
  provider_idempotency_key_ttl: positive.optional(),
  request_id_from: name.optional(),
  protect: z.strictObject({ entity_param: name.optional(), ttl: positive.optional() }).optional(),
  bounded: boundedSchema.optional(),
})
export type ToolConfig = z.infer<typeof toolSchema>

export const taskSchema = z.strictObject({
  ledger: z.union([z.boolean(), taskLedgerSchema.omit({ tasks: true })]).optional(),
  id_from: names.optional(),
  audit_receipt: z.boolean().optional(),
})

const flushReasons = z.enum(["cancel", "disconnect", "error"])

export const configSchema = z.strictObject({
  profile: z.enum(["development", "production"]).default("development"),
  transition: transitionSchema.optional(),
  action_ledger: actionLedgerSchema.optional(),
  task_ledger: taskLedgerSchema.optional(),
  tools: z.record(name, toolSchema.nullable()).default({}),
  tasks: z.record(name, taskSchema.nullable()).default({}),
  state_flush: z
    .strictObject({
      storage: z.enum(["memory", "file", "indexeddb", "durable_object"]).default("memory"),
      path: name.optional(),
      database: name.optional(),
      binding: name.optional(),
      flush_on: z.array(flushReasons).default(["cancel", "disconnect", "error"]),
      flush_on_complete: z.boolean().default(true),
    })
    .optional(),
  audit_receipt: z
    .strictObject({
      signing_key: name.optional(),
      signing_key_env: name.optional(),
      storage: z.enum(["memory", "file", "indexeddb"]).default("memory"),
      path: name.optional(),
      database: name.optional(),
      auto: z.boolean().default(true),
    })
    .optional(),
  registry: z.strictObject({ allowed: names.optional(), auto: z.boolean().optional() }).optional(),
  runner: z
    .strictObject({
      max_llm_retries: z.number().int().min(0).optional(),
      max_tool_retries: z.number().int().min(0).optional(),
    })
    .optional(),
  history_guard: z
    .strictObject({
      max_tokens: z.number().int().positive().optional(),
      max_messages: z.number().int().positive().optional(),
      warn_at: z.number().gt(0).max(1).optional(),
      detect_duplicates: z.union([z.boolean(), z.enum(["consecutive", "anywhere"])]).optional(),
    })
    .optional(),
  message_validator: z
    .union([z.boolean(), z.strictObject({ enabled: z.boolean().default(true) })])
    .optional(),
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
