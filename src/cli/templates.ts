// The files `mycelium init` writes. Each loads as written (a test proves it); the minimal one reads its receipt
// signing key from MYCELIUM_SIGNING_KEY, which `init` tells the user to set.

/** Where the schema is from a file at the project root; `init` rewrites it for a file written elsewhere. */
export const SCHEMA_REF = "./node_modules/mycelium-runtime/schemas/mycelium.schema.json"

const HEADER = `# yaml-language-server: $schema=${SCHEMA_REF}
# Reference: https://github.com/mycelium-runtime/mycelium-runtime/blob/main/docs/config.md
`

/** The on-ramp: one tool that must never run twice, on a file ledger. */
export const QUICKSTART = `${HEADER}# mycelium.yaml (quickstart): a redispatched call of subagent_task runs once.
transition:
  agent_id: my-agent              # TODO: your agent's name; part of every transition key
  policy_version: "2026.12.1"     # TODO: bump when a tool's side-effect policy changes
  reclaim_requires_death_signal: true

action_ledger:
  storage: file
  path: ./.mycelium/ledger.json
  unclassified_policy: strict
  tools: [subagent_task]

tools:
  subagent_task:
    side_effect_class: non_idempotent_mutate
`

/** Several guards at once, each on a durable local store. */
export const MINIMAL = `${HEADER}# mycelium.yaml (minimal): a ledgered delete, a deduplicated task, flushed run state, signed receipts.
transition:
  agent_id: my-agent              # TODO
  policy_version: "2026.12.1"     # TODO
  reclaim_requires_death_signal: true

action_ledger:
  storage: file
  path: ./.mycelium/ledger.json
  unclassified_policy: strict
  tools: [delete_file]

task_ledger:
  storage: file                   # default memory
  path: ./.mycelium/tasks.json
  tasks: [process_invoice]

state_flush:
  storage: file                   # default memory
  path: ./.mycelium/state.json

audit_receipt:
  signing_key_env: MYCELIUM_SIGNING_KEY
  storage: file
  path: ./.mycelium/receipts.jsonl

tools:
  fetch_customer:
    protect: {entity_param: customer_id, ttl: 60}
    bounded:
      schema:
        customer_id: {type: string, required: true, pattern: "^c\\\\d+$"}
      output_schema:
        id: {type: string, required: true}
  search_docs:
    bounded:
      schema:
        query: {type: string, required: true, max_length: 500}
  delete_file:
    side_effect_class: non_idempotent_mutate
    bounded:
      schema:
        path: {type: string, required: true}
      allowed_paths: [/workspace/src/]

tasks:
  process_invoice:
    ledger: true
    id_from: [invoice_id]

registry:
  auto: true

runner:
  max_llm_retries: 2
  max_tool_retries: 3

history_guard:
  max_tokens: 100000              # no default: set the limit your model takes
  max_messages: 1000

message_validator:
  enabled: true
`

/** Every section this package reads, with typical values; a comment names the default where a value is not it. */
export const FULL = `${HEADER}# mycelium.yaml (full reference). Every section, with typical values (a comment names the default where a
# value differs from it); delete what you do not need.
# Unknown keys are errors (a typo never turns a guard off silently).

# profile: production             # rejects weak choices at load (memory ledgers for side effects, derived ids, ...)

transition:                       # makes ledgered tools class-aware (required for side_effect_class)
  agent_id: my-agent              # TODO
  policy_version: "2026.12.1"     # TODO
  lease_ttl: 3600                 # seconds a claim is leased
  # lease_renew_interval: 1200    # default lease_ttl / 3; 0 disables auto-renewal
  poll_interval: 0.05             # seconds between polls of another worker's call
  poll_timeout: 300               # seconds a redispatch waits before LedgerPollTimeoutError
  reclaim_requires_death_signal: true
  # presumed_dead_after: 7200     # default 2 x lease_ttl
  # scope_from: {thread_id: thread_id, run_id: run_id}   # tool arguments that carry the scope

action_ledger:
  storage: file                   # default memory; or redis | upstash | postgres | neon | indexeddb | durable_object
  path: ./.mycelium/ledger.json
  # url_env: REDIS_URL            # redis / upstash (upstash also token_env)
  # dsn_env: DATABASE_URL         # postgres / neon (table: mycelium_action_ledger)
  # timeout: 30                   # redis / upstash / postgres / neon: seconds per request (redis: 5)
  unclassified_policy: strict     # default warn: legacy dedupe for tools without a class
  on_args_drift: soft             # soft | hard | off
  memory_storage_policy: warn     # error refuses side-effecting tools on a memory ledger
  request_identity_policy: derived  # require_explicit: consequential calls need a tool_call_id / request id
  tools: []                       # or: all

task_ledger:
  storage: file                   # default memory
  path: ./.mycelium/tasks.json
  tasks: []

state_flush:
  storage: file                   # default memory
  path: ./.mycelium/state.json
  flush_on: [cancel, disconnect, error]
  flush_on_complete: true

# audit_receipt:
#   signing_key_env: MYCELIUM_SIGNING_KEY
#   storage: file
#   path: ./.mycelium/receipts.jsonl
#   auto: true                    # every ledgered tool and task emits signed receipts

registry:
  auto: true                      # allowlist = every tool below

runner:
  max_llm_retries: 2
  max_tool_retries: 3

history_guard:
  max_tokens: 100000              # no default: set the limit your model takes
  warn_at: 0.9

message_validator:
  enabled: true

tools: {}
  # send_payment:
  #   side_effect_class: keyed_mutate     # read | idempotent_mutate | keyed_mutate | non_idempotent_mutate | irreversible
  #   provider_idempotency_key_param: idempotency_key
  #   retry_permission: manual_reconciliation_required
  #   bounded:
  #     schema:
  #       amount: {type: number, required: true}
  #   protect: {entity_param: customer_id, ttl: 60}

tasks: {}
  # process_invoice:
  #   ledger: true
  #   id_from: [invoice_id]
`

export const TEMPLATES = { quickstart: QUICKSTART, minimal: MINIMAL, full: FULL } as const
export type TemplateName = keyof typeof TEMPLATES
