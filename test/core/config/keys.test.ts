// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
import { describe, expect, it } from "vitest"
import {
  ConfigError,
  expandEnv,
  loadConfigFromString,
  type ResolvedStorage,
} from "../../../src/core/config/index.ts"
import { parseConfigSource } from "../../../src/core/config/source.ts"

const quiet = { onWarning: () => {} }
const T = "transition:\n  agent_id: a\n  policy_version: v1\n"
const storageOf = (yaml: string, env: Record<string, string>): ResolvedStorage | undefined =>
  loadConfigFromString(`${yaml}  tools: [t]\n`, { ...quiet, env }).tools.get("t")?.ledger?.storage

describe("$VAR expands where the Python original expands it", () => {
  it("agent_id and policy_version are used as written: the transition key is the original's", () => {
    const config = loadConfigFromString(
      'transition:\n  agent_id: "billing-$TEAM"\n  policy_version: "2026.12$$"\n',
      {
        ...quiet,
        env: { TEAM: "payments" },
      },
    )
    expect(config.transition?.agentId).toBe("billing-$TEAM")
    expect(config.transition?.policyVersion).toBe("2026.12$$")
  })

  // A path or signing key holding $X is refused instead (literal-refs.test.ts); a prefix's bare $X is text.
  it("tool names, request_id_from, scope_from and a prefix's bare $NAME are used as written", () => {
    const env = { X: "expanded" }
    const config = loadConfigFromString(
      `transition:\n  agent_id: a\n  policy_version: v\n  scope_from: {thread_id: $X}\n` +
        `action_ledger:\n  storage: redis\n  url: redis://h\n  prefix: app-$X\n` +
        `audit_receipt:\n  signing_key: k-$1\n` +
        `tools:\n  pay_$X:\n    ledger: true\n    side_effect_class: payment\n    request_id_from: \${X}\n`,
      { ...quiet, env },
    )
    const tool = config.tools.get("pay_$X")
    expect(tool?.binding?.requestIdFrom).toBe("${X}")
    expect(tool?.binding?.scopeFrom).toEqual({ thread_id: "$X" })
    expect(tool?.ledger?.storage.prefix).toBe("app-$X")
    expect(config.resolved.signingKey).toBe("k-$1")
  })

  it("url, dsn and token expand, with this package's syntax (unset without a default is an error)", () => {
    const env = { HOST: "db.internal", PASS: "s3cret" }
    expect(
      storageOf("action_ledger:\n  storage: redis\n  url: redis://:${PASS}@$HOST:6379\n", env)?.url,
    ).toBe("redis://:s3cret@db.internal:6379")
    expect(
      storageOf("action_ledger:\n  storage: postgres\n  dsn: postgres://${HOST:-x}/db\n", env)?.dsn,
    ).toBe("postgres://db.internal/db")
    expect(
      storageOf("action_ledger:\n  storage: upstash\n  url: https://$HOST\n  token: $PASS\n", env)?.token,
    ).toBe("s3cret")
  })

  it("a url_env / dsn_env variable's value is expanded as os.path.expandvars does (unset stays as written)", () => {
    const env = { REDIS_URL: "redis://:$PASS@${HOST}:1/$$/$NOPE/${}", PASS: "pw", HOST: "h", EMPTY: "" }
    expect(storageOf("action_ledger:\n  storage: redis\n  url_env: REDIS_URL\n", env)?.url).toBe(
      "redis://:pw@h:1/$$/$NOPE/${}",
    )
    const dsn = { DATABASE_URL: "postgres://u:p$EMPTY@h/db" }
    expect(
      storageOf("action_ledger:\n  storage: neon\n  dsn_env: DATABASE_URL\n", { ...dsn, EMPTY: "" })?.dsn,
    ).toBe("postgres://u:p@h/db")
  })

  it("a variable named after an Object.prototype member, or a non-text binding, is not set", () => {
    for (const name of ["constructor", "toString", "__proto__"]) {
      expect(() =>
        loadConfigFromString(`action_ledger:\n  storage: redis\n  url: redis://\${${name}}\n`, { env: {} }),
      ).toThrow(`environment variable '${name}' is not set`)
    }
    const env = { KV: { get: () => null } } as unknown as Record<string, string>
    expect(() => loadConfigFromString("action_ledger:\n  storage: redis\n  url_env: KV\n", { env })).toThrow(
      "environment variable 'KV' is not set",
    )
  })

  it("expandEnv copies a __proto__ key as a key, never as the prototype", () => {
    const source = parseConfigSource("a: 1\n")
    const value = JSON.parse('{"__proto__": {"polluted": "$X"}, "b": "$X"}')
    const out = expandEnv(value, { X: "x" }, source) as Record<string, unknown>
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.hasOwn(out, "__proto__")).toBe(true)
    expect(out).toMatchObject({ b: "x" })
    expect((out as { polluted?: unknown }).polluted).toBeUndefined()
  })
})

describe("keys that JavaScript objects know", () => {
  it("tools and tasks named constructor, toString or hasOwnProperty are ordinary names", async () => {
    const config = loadConfigFromString(
      `${T}action_ledger:\n  tools: [toString]\ntools:\n  constructor:\n    ledger: true\n    side_effect_class: read\n` +
        `  toString:\n    side_effect_class: read\ntasks:\n  hasOwnProperty:\n    ledger: true\n`,
      quiet,
    )
    expect([...config.tools.keys()]).toEqual(["constructor", "toString"])
    expect(config.tools.get("constructor")?.ledger?.storage.kind).toBe("memory")
    expect(config.tools.get("toString")?.binding?.sideEffectClass).toBe("read")
    expect([...config.tasks.keys()]).toEqual(["hasOwnProperty"])
    const ledger = await config.ledgerFor("constructor")
    expect(ledger).not.toBeNull()
  })

  it("a __proto__ field in a bounded schema is refused with its line and column", () => {
    let caught: unknown
    try {
      loadConfigFromString(
        `${T}tools:\n  t:\n    bounded:\n      schema:\n        __proto__: {type: string}\n`,
        quiet,
      )
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(ConfigError)
    expect(caught).toMatchObject({
      line: 8,
      column: 9,
      path: ["tools", "t", "bounded", "schema", "__proto__"],
    })
  })
})

describe("large files", () => {
  // Duplicate keys were found by comparing each key with every earlier one (32,000 tools took 38 s). 16,000 fit in
  // the 1 MiB a config may take.
  it("16,000 tools load in seconds, and a duplicate among them is still found with its line", () => {
    const n = 16_000
    const parts = [T, "tools:\n"]
    for (let i = 0; i < n; i++) parts.push(`  t${i}:\n    ledger: true\n    side_effect_class: read\n`)
    const text = parts.join("")
    const started = Date.now()
    const config = loadConfigFromString(text, quiet)
    expect(config.tools.size).toBe(n)
    expect(Date.now() - started).toBeLessThan(15_000)
    expect(() => loadConfigFromString(`${text}  t7:\n    side_effect_class: read\n`, quiet)).toThrow(
      `mycelium.yaml:${3 + 2 + n * 3}:3 at 'tools.t7': duplicate key 't7' (first at line ${5 + 7 * 3})`,
    )
  }, 60_000)
})
