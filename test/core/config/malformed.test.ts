// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"
import { MemoryLedgerStorage, MissingRequestIdentityError } from "../../../src/core/ledger/index.ts"
import { ManualClock } from "../../../src/testing.ts"

const T = "transition:\n  agent_id: a\n  policy_version: v1\n"

// A billion laughs: 10 values, each level 10 aliases of the one before it.
const L = "abcdefghij"
let BOMB = "tools:\n  t:\n    bounded:\n      allowed_paths:\n        - &a [x,x,x,x,x,x,x,x,x,x]\n"
for (let i = 1; i < 10; i++) BOMB += `        - &${L[i]} [${Array(10).fill(`*${L[i - 1]}`)}]\n`
const REDIS = "action_ledger:\n  storage: redis\n  url: "

// [name, yaml, expected path, expected line, expected column, message fragment]
type Case = [string, string, string, number, number, string]
const cases: Case[] = [
  ["unknown top-level key", "transitoin:\n  agent_id: a\n", "transitoin", 1, 1, "unknown key 'transitoin'"],
  ["unknown transition key", `${T}  lease_tl: 5\n`, "transition.lease_tl", 4, 3, "unknown key"],
  [
    "unknown action_ledger key",
    "action_ledger:\n  storage: memory\n  pth: x\n",
    "action_ledger.pth",
    3,
    3,
    "unknown key",
  ],
  ["unknown task_ledger key", "task_ledger:\n  taks: []\n", "task_ledger.taks", 2, 3, "unknown key"],
  [
    "unknown tool key",
    "tools:\n  t:\n    side_efect_class: read\n",
    "tools.t.side_efect_class",
    3,
    5,
    "unknown key",
  ],
  [
    "unknown bounded key",
    "tools:\n  t:\n    bounded:\n      shema: {}\n",
    "tools.t.bounded.shema",
    4,
    7,
    "unknown key",
  ],
  [
    "unknown protect key",
    "tools:\n  t:\n    protect:\n      ttl: 5\n      entity: x\n",
    "tools.t.protect.entity",
    5,
    7,
    "unknown key",
  ],
  [
    "unknown scope_from key",
    `${T}  scope_from:\n    thread: t\n`,
    "transition.scope_from.thread",
    5,
    5,
    "unknown key",
  ],
  ["unknown task key", "tasks:\n  p:\n    idfrom: [a]\n", "tasks.p.idfrom", 3, 5, "unknown key"],
  ["unknown state_flush key", "state_flush:\n  flush: [cancel]\n", "state_flush.flush", 2, 3, "unknown key"],
  [
    "unknown audit_receipt key",
    "audit_receipt:\n  agent_id: x\n",
    "audit_receipt.agent_id",
    2,
    3,
    "unknown key",
  ],
  ["unknown registry key", "registry:\n  allow: [a]\n", "registry.allow", 2, 3, "unknown key"],
  ["unknown runner key", "runner:\n  retries: 2\n", "runner.retries", 2, 3, "unknown key"],
  [
    "unknown history_guard key",
    "history_guard:\n  max_token: 5\n",
    "history_guard.max_token",
    2,
    3,
    "unknown key",
  ],
  [
    "unknown message_validator key",
    "message_validator:\n  strict: true\n",
    "message_validator.strict",
    2,
    3,
    "unknown key",
  ],
  [
    "per-tool ledger unknown key",
    "tools:\n  t:\n    ledger:\n      storag: file\n",
    "tools.t.ledger.storag",
    4,
    7,
    "unknown key",
  ],
  ["transition not a mapping", "transition: 5\n", "transition", 1, 13, ""],
  [
    "agent_id missing",
    "transition:\n  policy_version: v\n",
    "transition.agent_id",
    2,
    3,
    "missing required key 'agent_id'",
  ],
  [
    "policy_version missing",
    "transition:\n  agent_id: a\n",
    "transition.policy_version",
    2,
    3,
    "policy_version",
  ],
  ["lease_ttl negative", `${T}  lease_ttl: -1\n`, "transition.lease_ttl", 4, 14, ""],
  ["lease_ttl a string", `${T}  lease_ttl: soon\n`, "transition.lease_ttl", 4, 14, ""],
  ["poll_interval zero", `${T}  poll_interval: 0\n`, "transition.poll_interval", 4, 18, ""],
  [
    "death signal not bool",
    `${T}  reclaim_requires_death_signal: maybe\n`,
    "transition.reclaim_requires_death_signal",
    4,
    34,
    "",
  ],
  ["bad storage kind", "action_ledger:\n  storage: mongo\n", "action_ledger.storage", 2, 12, ""],
  ["sqlite storage", "action_ledger:\n  storage: sqlite\n", "action_ledger.storage", 2, 12, "sqlite"],
  ["file without path", "action_ledger:\n  storage: file\n", "action_ledger", 2, 3, "needs 'path'"],
  [
    "key for another storage",
    "action_ledger:\n  storage: file\n  path: x.json\n  dsn: postgres://x\n",
    "action_ledger.dsn",
    4,
    3,
    "does not apply",
  ],
  [
    // The original's Postgres ledger takes dsn / dsn_env only.
    "postgres with url",
    "action_ledger:\n  storage: postgres\n  url: postgres://x\n",
    "action_ledger.url",
    3,
    3,
    "does not apply",
  ],
  [
    "signing_key and signing_key_env",
    "audit_receipt:\n  signing_key: abc\n  signing_key_env: K\n",
    "audit_receipt.signing_key_env",
    3,
    3,
    "not both",
  ],
  [
    "upstash without token",
    "action_ledger:\n  storage: upstash\n  url: https://x\n",
    "action_ledger",
    2,
    3,
    "token",
  ],
  [
    "url and url_env",
    "action_ledger:\n  storage: redis\n  url: redis://x\n  url_env: R\n",
    "action_ledger.url_env",
    4,
    3,
    "not both",
  ],
  [
    "redis url scheme",
    "action_ledger:\n  storage: redis\n  url: http://x\n",
    "action_ledger.url",
    3,
    8,
    "redis://",
  ],
  [
    "missing *_env variable",
    "action_ledger:\n  storage: postgres\n  dsn_env: NO_SUCH_VAR\n",
    "action_ledger.dsn_env",
    3,
    12,
    "NO_SUCH_VAR",
  ],
  // Variables expand in url, dsn and token only (a path or a signing_key is used as written, as the original does).
  [
    "missing $VAR in a url",
    "action_ledger:\n  storage: redis\n  url: redis://$NO_HOST:6379\n",
    "action_ledger.url",
    3,
    8,
    "NO_HOST",
  ],
  [
    "missing ${VAR} in a dsn",
    "task_ledger:\n  storage: postgres\n  dsn: ${NO_DSN}\n",
    "task_ledger.dsn",
    3,
    8,
    "NO_DSN",
  ],
  [
    "a url that expands to nothing",
    "action_ledger:\n  storage: redis\n  url: ${NO_HOST:-}\n",
    "action_ledger.url",
    3,
    8,
    "empty",
  ],
  [
    "missing signing_key_env",
    "audit_receipt:\n  signing_key_env: NO_KEY\n",
    "audit_receipt.signing_key_env",
    2,
    20,
    "NO_KEY",
  ],
  [
    "bad class name",
    `${T}tools:\n  t:\n    side_effect_class: paymnt\n`,
    "tools.t.side_effect_class",
    6,
    24,
    "",
  ],
  [
    "bad retry permission",
    `${T}tools:\n  t:\n    side_effect_class: read\n    retry_permission: sometimes\n`,
    "tools.t.retry_permission",
    7,
    23,
    "",
  ],
  [
    "bad spendability",
    `${T}tools:\n  t:\n    side_effect_class: read\n    spendability: twice\n`,
    "tools.t.spendability",
    7,
    19,
    "",
  ],
  [
    "bad capability",
    `${T}tools:\n  t:\n    side_effect_class: read\n    capability: psychic\n`,
    "tools.t.capability",
    7,
    17,
    "",
  ],
  [
    "ledgered tool without class",
    `${T}action_ledger:\n  tools: [pay]\n`,
    "action_ledger.tools[0]",
    5,
    11,
    "no side_effect_class",
  ],
  [
    "class without transition",
    "tools:\n  t:\n    side_effect_class: read\n",
    "tools.t.side_effect_class",
    3,
    24,
    "transition",
  ],
  ["tools list not a list", "action_ledger:\n  tools: some\n", "action_ledger.tools", 2, 10, ""],
  ["unimplemented section", "loop_guard:\n  storage: memory\n", "loop_guard", 1, 1, "does not implement"],
  [
    "unimplemented tool key",
    "tools:\n  t:\n    callable: pkg.mod:fn\n",
    "tools.t.callable",
    3,
    5,
    "instrument",
  ],
  ["bad flush reason", "state_flush:\n  flush_on: [crash]\n", "state_flush.flush_on[0]", 2, 14, ""],
  // The original's StateFlush(flush_on=[]) flushes on cancel, disconnect and error (`flush_on or [...]`; run with
  // PYTHONPATH=<sdk> python3 -c "from mycelium import StateFlush; print(sorted(StateFlush(flush_on=[])._flush_on))").
  ["empty flush_on", "state_flush:\n  flush_on: []\n", "state_flush.flush_on", 2, 13, "all three"],
  ["history warn_at above 1", "history_guard:\n  warn_at: 2\n", "history_guard.warn_at", 2, 12, ""],
  ["runner retries negative", "runner:\n  max_llm_retries: -1\n", "runner.max_llm_retries", 2, 20, ""],
  [
    "bad table name",
    "action_ledger:\n  storage: postgres\n  dsn: postgres://x\n  table: drop table;\n",
    "action_ledger.table",
    4,
    10,
    "",
  ],
  [
    "production weak identity",
    "profile: production\naction_ledger:\n  storage: file\n  path: l.json\n  request_identity_policy: derived\n",
    "action_ledger.request_identity_policy",
    5,
    28,
    "profile is 'production'",
  ],
  [
    "production unclassified warn",
    "profile: production\naction_ledger:\n  storage: file\n  path: l.json\n  unclassified_policy: warn\n",
    "action_ledger.unclassified_policy",
    5,
    24,
    "production",
  ],
  [
    "production memory policy warn",
    "profile: production\naction_ledger:\n  memory_storage_policy: warn\n",
    "action_ledger.memory_storage_policy",
    3,
    26,
    "production",
  ],
  [
    "production mutating tool on memory",
    `profile: production\n${T}action_ledger:\n  tools: [pay]\ntools:\n  pay:\n    side_effect_class: payment\n`,
    "action_ledger.storage",
    6,
    3,
    "memory",
  ],
  [
    "production signing key inline",
    "profile: production\naudit_receipt:\n  signing_key: abc\n",
    "audit_receipt.signing_key",
    3,
    3,
    "signing_key_env",
  ],
  [
    // The original ledgers a listed tool whatever its own ledger: says; refused rather than run bare here.
    "ledger false on a listed tool",
    `${T}action_ledger:\n  tools: all\ntools:\n  t:\n    side_effect_class: read\n    ledger: false\n`,
    "tools.t.ledger",
    9,
    13,
    "action_ledger.tools is 'all'",
  ],
  [
    "production weak identity in a tool's ledger",
    "profile: production\naction_ledger:\n  storage: file\n  path: l.json\ntools:\n  t:\n    ledger:\n      request_identity_policy: derived\n",
    "tools.t.ledger.request_identity_policy",
    8,
    32,
    "profile is 'production'",
  ],
  [
    "production unclassified warn in a tool's ledger",
    "profile: production\naction_ledger:\n  storage: file\n  path: l.json\ntools:\n  t:\n    ledger:\n      unclassified_policy: warn\n",
    "tools.t.ledger.unclassified_policy",
    8,
    28,
    "production",
  ],
  [
    "memory_storage_policy in a tool's ledger",
    "tools:\n  t:\n    ledger:\n      memory_storage_policy: warn\n",
    "tools.t.ledger.memory_storage_policy",
    4,
    7,
    "unknown key",
  ],
  ["bad profile", "profile: staging\n", "profile", 1, 10, ""],
  ["root not a mapping", "- a\n- b\n", "", 1, 1, "mapping"],
  ["invalid YAML", "tools: [\n", "", 2, 1, "invalid YAML"],
  [
    "duplicate key",
    "profile: development\nprofile: production\n",
    "profile",
    2,
    1,
    "duplicate key 'profile' (first at line 1)",
  ],
  [
    // (A tool named 1 is refused as such: source-defects-fixed.test.ts.)
    "duplicate key, 1 and '1' are one key",
    "action_ledger:\n  1: {}\n  a: {}\n  '1': {}\n",
    "action_ledger.1",
    4,
    3,
    "duplicate key '1' (first at line 2)",
  ],
  ["__proto__ at the root", "__proto__:\n  x: 1\n", "__proto__", 1, 1, "unknown key '__proto__'"],
  [
    "__proto__ carrying a ledger's storage",
    "action_ledger:\n  tools: [pay]\n  __proto__:\n    storage: file\n    path: x.json\n",
    "action_ledger.__proto__",
    3,
    3,
    "unknown key '__proto__'",
  ],
  [
    "__proto__ hiding a tool",
    "tools:\n  __proto__:\n    send_payment:\n      ledger: true\n",
    "tools.__proto__",
    2,
    3,
    "unknown key '__proto__'",
  ],
  [
    "__proto__ in a flow mapping",
    "transition: {agent_id: a, policy_version: v, scope_from: {__proto__: {thread_id: t}}}\n",
    "transition.scope_from.__proto__",
    1,
    59,
    "unknown key '__proto__'",
  ],
  [
    "constructor as a tool key",
    "tools:\n  a:\n    constructor: 1\n",
    "tools.a.constructor",
    3,
    5,
    "unknown key 'constructor'",
  ],
  [
    "toString as a tool key",
    "tools:\n  a:\n    toString: 1\n",
    "tools.a.toString",
    3,
    5,
    "unknown key 'toString'",
  ],
  ["a mapping as a key", "tools:\n  ? [a, b]\n  : {}\n", "tools", 2, 5, "plain text"],
  [
    "lease_ttl over a year",
    `${T}  lease_ttl: 31536001\n`,
    "transition.lease_ttl",
    4,
    14,
    "at most 31536000 seconds",
  ],
  [
    "lease_renew_interval past a timer's range",
    `${T}  lease_renew_interval: 7776000000\n`,
    "transition.lease_renew_interval",
    4,
    25,
    "at most 31536000 seconds",
  ],
  [
    "poll_interval over a year",
    `${T}  poll_interval: 1e9\n`,
    "transition.poll_interval",
    4,
    18,
    "at most 31536000 seconds",
  ],
  [
    "receipt on tool without ledger",
    "audit_receipt: {}\ntools:\n  t:\n    ledger: false\n    audit_receipt: true\n",
    "tools.t.audit_receipt",
    5,
    20,
    "ledger",
  ],
  ...["redis://${H:=x}:1", "redis://${H-x}:1", "redis://${1X}:1", "redis://${NOPE:-${H}}:1"].map(
    (url): Case => [
      `url ${url}`,
      `${REDIS}${url}\n`,
      "action_ledger.url",
      3,
      8,
      "only ${VAR} and ${VAR:-default} expand",
    ],
  ),
  ["alias bomb", BOMB, "tools.t.bounded.allowed_paths[5][7]", 10, 36, "over a million values"],
  // Both were refused without a place (an alias before its anchor), or as a RangeError, not a ConfigError (a cycle,
  // which toJS builds and the text checks walked until the stack overflowed; the CLI exited 1 for it).
  [
    "alias before its anchor",
    "tools:\n  t:\n    bounded:\n      allowed_paths: [*p, &p x]\n",
    "tools.t.bounded.allowed_paths[0]",
    4,
    23,
    "alias '*p' before or inside its anchor",
  ],
  [
    "alias inside its own anchor",
    `${T}tools:\n  t:\n    bounded:\n      schema: &s\n        f:\n          x: *s\n`,
    "tools.t.bounded.schema.f.x",
    9,
    14,
    "alias '*s' before or inside its anchor",
  ],
  [
    "receipt on task without ledger",
    "audit_receipt: {}\ntasks:\n  p:\n    ledger: false\n    audit_receipt: true\n",
    "tasks.p.audit_receipt",
    5,
    20,
    "ledger",
  ],
]

describe("malformed mycelium.yaml", () => {
  it("has at least 40 cases", () => expect(cases.length).toBeGreaterThanOrEqual(40))
  it.each(cases)("%s", (_name, yaml, path, line, column, fragment) => {
    let caught: unknown
    try {
      loadConfigFromString(yaml, { env: {} })
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(ConfigError)
    const err = caught as ConfigError
    expect(err.code).toBe("config_invalid")
    expect(
      err.path
        .map((p) => (typeof p === "number" ? `[${p}]` : p))
        .join(".")
        .replaceAll(".[", "["),
    ).toBe(path)
    expect([err.line, err.column]).toEqual([line, column])
    expect(err.message).toContain(`mycelium.yaml:${line}:${column}`)
    if (path) expect(err.message).toContain(`'${path}'`)
    expect(err.message).toContain(fragment)
  })
})

describe("a variable set to the empty string is no value", () => {
  const url = (ref: string) =>
    `action_ledger:\n  storage: redis\n  url: redis://${ref}:6379/0\n  tools: [t]\n`
  it("${VAR:-default} takes its default", () => {
    const config = loadConfigFromString(url("${RHOST:-127.0.0.1}"), { env: { RHOST: "" } })
    expect(config.tools.get("t")?.ledger?.storage).toMatchObject({ url: "redis://127.0.0.1:6379/0" })
  })
  it("$VAR without a default is refused at its line, naming the key and the variable", () => {
    expect(() => loadConfigFromString(url("$RHOST"), { env: { RHOST: "" } })).toThrow(
      "mycelium.yaml:3:8 at 'action_ledger.url': environment variable 'RHOST'",
    )
  })
})

describe("the keys a tool's ledger is built from reach that ledger", () => {
  const pay = (transition: string, ledger: string) =>
    `${T}${transition}action_ledger:\n  storage: file\n  path: l.json\n${ledger}  tools: [pay]\n` +
    "tools:\n  pay:\n    side_effect_class: idempotent_mutate\n"

  it("a tool's own unclassified_policy and on_args_drift beat the global ones", () => {
    const config = loadConfigFromString(
      `${T}action_ledger:\n  storage: memory\n  on_args_drift: soft\ntools:\n  pay:\n    side_effect_class: irreversible\n` +
        "    ledger:\n      unclassified_policy: strict\n      on_args_drift: hard\n",
      { onWarning: () => {} },
    )
    expect(config.tools.get("pay")?.ledger).toMatchObject({
      unclassifiedPolicy: "strict",
      onArgsDrift: "hard",
    })
  })

  it("request_identity_policy: require_explicit refuses a call without a request id before it runs", async () => {
    const storage = new MemoryLedgerStorage()
    const config = loadConfigFromString(pay("", "  request_identity_policy: require_explicit\n"), {
      storageFactory: () => storage,
    })
    let runs = 0
    const tool = config.apply("pay", async () => ++runs)
    await expect(tool({ amt: 1 })).rejects.toBeInstanceOf(MissingRequestIdentityError)
    expect(runs).toBe(0)
  })

  // The YAML default is true, as in the original (ActionLedger's own is false): the second worker waits for the
  // first one's death signal (none within presumed_dead_after) until poll_timeout, and the body runs once.
  it.each([
    ["", 1, "LedgerPollTimeoutError"],
    ["  reclaim_requires_death_signal: false\n", 2, "run 2"],
  ])(
    "a live worker's lapsed lease is taken over only with reclaim_requires_death_signal: false (%j)",
    async (key, runs, second) => {
      const storage = new MemoryLedgerStorage()
      const clock = new ManualClock()
      const lease = "  lease_ttl: 10\n  lease_renew_interval: 0\n  poll_interval: 1\n  poll_timeout: 5\n"
      const yaml = pay(`${lease}  presumed_dead_after: 1000\n${key}`, "")
      const worker = () =>
        loadConfigFromString(yaml, { storageFactory: () => storage, clock, onWarning: () => {} })
      let n = 0
      let wake = () => {}
      const slow = new Promise<void>((r) => {
        wake = r
      })
      const body = async () => {
        if (++n === 1) await slow
        return `run ${n}`
      }
      const first = worker().apply("pay", body)({ amt: 1 }, { requestId: "order-1" })
      while (n === 0) await new Promise((r) => setTimeout(r, 0))
      clock.advance(11)
      const got = await worker()
        .apply("pay", body)({ amt: 1 }, { requestId: "order-1" })
        .catch((e: Error) => e.name)
      wake()
      await first
      expect([got, n]).toEqual([second, runs])
    },
  )
})
