// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfigFromString } from "../../../src/core/config/index.ts"

const quiet = { onWarning: () => {} }
const env = { RECEIPT_KEY: "s3cret-from-vault", DATA_DIR: "/var/lib/app", X: "x" }
const T = "transition: {agent_id: billing, policy_version: '1'}\n"

const refused = (yaml: string): ConfigError => {
  try {
    loadConfigFromString(yaml, { ...quiet, env })
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error(`loaded: ${yaml}`)
}

// Variables expand in url, dsn and token only (a6e9083). A reference anywhere else in a store or receipt setting
// used to expand; read as text it signs with a public key or opens a ledger relative to each worker's directory.
describe("a variable reference where variables do not expand is an error, not text", () => {
  it("signing_key: ${RECEIPT_KEY} names signing_key_env, with line and column", () => {
    const e = refused(`${T}audit_receipt:\n  storage: memory\n  signing_key: "\${RECEIPT_KEY}"\n`)
    expect(e.path).toEqual(["audit_receipt", "signing_key"])
    expect([e.line, e.column]).toEqual([4, 16])
    expect(e.code).toBe("config_invalid")
    expect(e.message).toContain("mycelium.yaml:4:16 at 'audit_receipt.signing_key'")
    expect(e.message).toContain("variables expand only in url, dsn and token")
    expect(e.message).toContain("signing_key_env: RECEIPT_KEY")
  })

  it("a signing key holding a reference among other text is refused without echoing the key", () => {
    for (const key of ["pre-${RECEIPT_KEY}", "k$RECEIPT_KEY-2"]) {
      const e = refused(`audit_receipt:\n  signing_key: "${key}"\n`)
      expect(e.path).toEqual(["audit_receipt", "signing_key"])
      expect(e.message).not.toContain(key)
      expect(e.message).toContain("signing_key_env")
    }
    expect(refused("audit_receipt:\n  signing_key: $RECEIPT_KEY\n").message).toContain(
      "signing_key_env: RECEIPT_KEY",
    )
  })

  it("a path, ${NAME} or $NAME, in every section that takes one", () => {
    for (const ref of ["${DATA_DIR}", "$DATA_DIR", "${DATA_DIR:-/tmp}"]) {
      const cases: [string, (string | number)[]][] = [
        [`action_ledger:\n  storage: file\n  path: ${ref}/l.json\n`, ["action_ledger", "path"]],
        [`task_ledger:\n  storage: file\n  path: ${ref}/t.json\n`, ["task_ledger", "path"]],
        [`state_flush:\n  storage: file\n  path: ${ref}/s\n`, ["state_flush", "path"]],
        [`audit_receipt:\n  storage: file\n  path: ${ref}/r\n`, ["audit_receipt", "path"]],
        [
          `${T}tools:\n  pay:\n    side_effect_class: payment\n    ledger: {storage: file, path: "${ref}/l"}\n`,
          ["tools", "pay", "ledger", "path"],
        ],
        [
          `tasks:\n  job:\n    ledger: {storage: file, path: "${ref}/l"}\n`,
          ["tasks", "job", "ledger", "path"],
        ],
      ]
      for (const [yaml, path] of cases) {
        const e = refused(yaml)
        expect(e.path).toEqual(path)
        expect(e.line).toBe(yaml.split("\n").length - 1)
        expect(e.message).toContain(`'${ref}'`)
        expect(e.message).toContain("write the path out")
      }
    }
  })

  it("prefix, database, binding and the *_env names refuse ${NAME}", () => {
    const cases: [string, string][] = [
      ['action_ledger:\n  storage: redis\n  url: redis://h\n  prefix: "${X}:"\n', "prefix"],
      ["task_ledger:\n  storage: upstash\n  url: https://h\n  token: t\n  prefix: app-${X}\n", "prefix"],
      ["action_ledger:\n  storage: indexeddb\n  database: ${X}\n", "database"],
      ["state_flush:\n  storage: durable_object\n  binding: ${X}\n", "binding"],
      ["action_ledger:\n  storage: redis\n  url_env: ${REDIS_URL}\n", "url_env"],
      ["audit_receipt:\n  signing_key_env: ${RECEIPT_KEY}\n", "signing_key_env"],
    ]
    for (const [yaml, key] of cases) {
      const e = refused(yaml)
      expect(e.path.at(-1)).toBe(key)
      expect(e.line).toBe(yaml.split("\n").length - 1)
    }
  })

  it("text that is no ${NAME} reference loads as written", () => {
    const config = loadConfigFromString(
      `${T}action_ledger:\n  storage: redis\n  url: redis://h\n  prefix: "app$x:\${}:$"\n  tools: [pay]\n` +
        `audit_receipt:\n  signing_key: "k$$1{X}$"\n  storage: file\n  path: ./.mycelium/re$1.json\n` +
        "tools:\n  pay: {side_effect_class: payment}\n",
      { ...quiet, env },
    )
    expect(config.tools.get("pay")?.ledger?.storage.prefix).toBe("app$x:${}:$")
    expect(config.resolved.signingKey).toBe("k$$1{X}$")
  })

  it("identity keys are read as written, as the original keys them", () => {
    const config = loadConfigFromString(
      'transition:\n  agent_id: billing-${TEAM}\n  policy_version: v$X\n  scope_from: {thread_id: "${X}"}\n' +
        "tools:\n  pay_${X}:\n    side_effect_class: payment\n    request_id_from: ${X}\n",
      { ...quiet, env },
    )
    expect(config.transition?.agentId).toBe("billing-${TEAM}")
    expect(config.transition?.policyVersion).toBe("v$X")
    expect(config.tools.get("pay_${X}")?.binding).toMatchObject({
      scopeFrom: { thread_id: "${X}" },
      requestIdFrom: "${X}",
    })
  })
})
