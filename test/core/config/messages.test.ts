// The schema of mycelium.yaml is zod/mini, which has no messages of its own ("Invalid input" for everything): the
// loader passes zod's English messages per parse. These pin the messages a user reads, in every runtime, and that
// loading a config leaves the application's own zod configuration alone (a global z.config(en()) would not).
import { describe, expect, it } from "vitest"
import * as z from "zod/mini"
import { ConfigError, configSchema, loadConfigFromString } from "../../../src/core/config/index.ts"

const T = "transition:\n  agent_id: a\n  policy_version: v1\n"
const tool = (lines: string) => `${T}tools:\n  t:\n    side_effect_class: read\n${lines}`

// [yaml, line:column, path, detail: the message after "mycelium.yaml:L:C at 'path': "]
type Case = [string, string, string, string]
const cases: Case[] = [
  ["profile: staging\n", "1:10", "profile", 'Invalid option: expected one of "development"|"production"'],
  [
    "transition:\n  agent_id: ''\n  policy_version: v\n",
    "2:13",
    "transition.agent_id",
    "Too small: expected string to have >=1 characters",
  ],
  ["transition:\n  policy_version: v\n", "2:3", "transition.agent_id", "missing required key 'agent_id'"],
  // A key that is there with the wrong type is not a missing key.
  ["transition: 5\n", "1:13", "transition", "Invalid input: expected object, received number"],
  [
    `${T}  lease_ttl: soon\n`,
    "4:14",
    "transition.lease_ttl",
    "Invalid input: expected number, received string",
  ],
  [
    "runner:\n  max_tool_retries: 1.5\n",
    "2:21",
    "runner.max_tool_retries",
    "Invalid input: expected int, received number",
  ],
  [
    "tasks:\n  p:\n    id_from: a\n",
    "3:14",
    "tasks.p.id_from",
    "Invalid input: expected array, received string",
  ],
  [
    "transition:\n  agent_id: a\n  policy_version: []\n",
    "3:19",
    "transition.policy_version",
    "Invalid input",
  ],
  [`${T}  lease_ttl: -1\n`, "4:14", "transition.lease_ttl", "Too small: expected number to be >0"],
  [
    `${T}  lease_renew_interval: -1\n`,
    "4:25",
    "transition.lease_renew_interval",
    "Too small: expected number to be >=0",
  ],
  [
    "action_ledger:\n  storage: mongo\n",
    "2:12",
    "action_ledger.storage",
    'Invalid option: expected one of "memory"|"file"|"indexeddb"|"durable_object"|"upstash"|"redis"|"postgres"|"neon"',
  ],
  [
    "action_ledger:\n  storage: postgres\n  dsn: postgres://x\n  table: drop table;\n",
    "4:10",
    "action_ledger.table",
    "a table name: lower-case letters, digits and underscores, starting with a letter",
  ],
  [
    // The stores refuse an upper-case name when they open: the config refuses it at load, with its line.
    "action_ledger:\n  storage: neon\n  dsn: postgres://x\n  table: Ledger\n",
    "4:10",
    "action_ledger.table",
    "a table name: lower-case letters, digits and underscores, starting with a letter",
  ],
  [
    // Postgres cuts identifiers at 63 bytes: two longer names would be one table.
    `task_ledger:\n  storage: postgres\n  dsn: postgres://x\n  table: ${"t".repeat(64)}\n`,
    "4:10",
    "task_ledger.table",
    "a table name of at most 63 characters (50 for action_ledger: it appends _dispatch_idx)",
  ],
  [
    // The action store's index name appends _dispatch_idx: past 50 the store refused it at its first call, unplaced.
    `action_ledger:\n  storage: postgres\n  dsn: postgres://x\n  table: ${"t".repeat(51)}\n`,
    "4:10",
    "action_ledger.table",
    "a table name of at most 50 characters for action_ledger (it appends _dispatch_idx), got 51",
  ],
  [
    `tools:\n  t:\n    ledger:\n      storage: neon\n      dsn: postgres://x\n      table: ${"t".repeat(55)}\n`,
    "6:14",
    "tools.t.ledger.table",
    "a table name of at most 50 characters for action_ledger (it appends _dispatch_idx), got 55",
  ],
  ["action_ledger:\n  tools: some\n", "2:10", "action_ledger.tools", "Invalid input"],
  [
    tool("    retry_permission: sometimes\n"),
    "7:23",
    "tools.t.retry_permission",
    'Invalid option: expected one of "safe_retry"|"retry_only_with_same_provider_idempotency_key"|' +
      '"manual_reconciliation_required"|"never_retry_automatically"',
  ],
  [
    tool("    capability: psychic\n"),
    "7:17",
    "tools.t.capability",
    'Invalid option: expected one of "idempotent"|"queryable"|"blind"',
  ],
  ['tools:\n  t:\n    ledger: "yes"\n', "3:13", "tools.t.ledger", "Invalid input"],
  [
    "tools:\n  t:\n    foo: 1\n    bar: 2\n    baz: 3\n",
    "3:5",
    "tools.t.foo",
    "unknown key 'foo' (and 'bar', 'baz')",
  ],
  [
    "state_flush:\n  flush_on: [crash]\n",
    "2:14",
    "state_flush.flush_on[0]",
    'Invalid option: expected one of "cancel"|"disconnect"|"error"',
  ],
  [
    "runner:\n  max_llm_retries: -1\n",
    "2:20",
    "runner.max_llm_retries",
    "Too small: expected number to be >=0",
  ],
  ["history_guard:\n  warn_at: 2\n", "2:12", "history_guard.warn_at", "Too big: expected number to be <=1"],
  ["history_guard:\n  warn_at: 0\n", "2:12", "history_guard.warn_at", "Too small: expected number to be >0"],
  [
    "history_guard:\n  max_tokens: 99999999999999999999\n",
    "2:15",
    "history_guard.max_tokens",
    "Too big: expected int to be <=9007199254740991",
  ],
  ["history_guard:\n  detect_duplicates: 3\n", "2:22", "history_guard.detect_duplicates", "Invalid input"],
  ["message_validator: 5\n", "1:20", "message_validator", "Invalid input"],
]

function failure(yaml: string): ConfigError {
  try {
    loadConfigFromString(yaml, { env: {} })
  } catch (e) {
    if (e instanceof ConfigError) return e
    throw e
  }
  throw new Error(`expected a ConfigError for:\n${yaml}`)
}

describe("ConfigError messages", () => {
  it.each(cases)("%s", (yaml, where, path, detail) => {
    const err = failure(yaml)
    expect(err.detail).toBe(detail)
    expect(err.message).toBe(`mycelium.yaml:${where} at '${path}': ${detail}`)
  })
})

describe("zod configuration", () => {
  it("loading a config leaves the application's zod messages as they were", () => {
    // The application's own messages, set globally as an application would. Not zod/mini's bare default: in a
    // runtime that runs every test file in one process (bun), another file's classic zod import has already
    // installed the English ones, which a global z.config(en()) in the config modules would not visibly change.
    const previous = z.config().localeError
    z.config({ localeError: () => "the application's message" })
    try {
      const mine = z.string().check(z.maxLength(2))
      expect(mine.safeParse("long").error?.issues[0]?.message).toBe("the application's message")
      expect(failure("history_guard:\n  warn_at: 2\n").detail).toBe("Too big: expected number to be <=1")
      loadConfigFromString(T, { env: {} })
      expect(mine.safeParse("long").error?.issues[0]?.message).toBe("the application's message")
    } finally {
      z.config({ localeError: previous })
    }
  })
})

describe("defaults", () => {
  it("fills the defaults of every section that has them, and keeps a numeric policy_version as text", () => {
    expect(configSchema.parse({})).toEqual({ profile: "development", tools: {}, tasks: {} })
    expect(
      configSchema.parse({
        transition: { agent_id: "a", policy_version: 2026.07 },
        action_ledger: {},
        task_ledger: {},
        tools: { t: { ledger: {} } },
        state_flush: {},
        audit_receipt: {},
        message_validator: {},
      }),
    ).toEqual({
      profile: "development",
      transition: { agent_id: "a", policy_version: "2026.07", reclaim_requires_death_signal: true },
      action_ledger: { storage: "memory" },
      task_ledger: { storage: "memory" },
      // A tool's own mapping has no store default: it keeps action_ledger's unless it names one.
      tools: { t: { ledger: {} } },
      tasks: {},
      state_flush: {
        storage: "memory",
        flush_on: ["cancel", "disconnect", "error"],
        flush_on_complete: true,
      },
      audit_receipt: { storage: "memory", auto: true },
      message_validator: { enabled: true },
    })
    const config = loadConfigFromString("transition:\n  agent_id: a\n  policy_version: 2026.07\n", {
      env: {},
    })
    expect(config.profile).toBe("development")
    expect(config.transition?.policyVersion).toBe("2026.07")
    expect(config.transition?.reclaimRequiresDeathSignal).toBe(true)
  })
})
