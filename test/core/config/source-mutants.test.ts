// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
// Behaviours of the config reader no other test pinned (found by mutation testing): where an error points, what a
// tagged or keyed scalar reads as next to PyYAML's safe_load, how far a secret is kept out of a message, the size
// limit's boundary.
import { describe, expect, it } from "vitest"
import { pythonExpandVars, pythonStrip } from "../../../src/core/config/env.ts"
import { ConfigError, expandEnv, loadConfigFromString } from "../../../src/core/config/index.ts"
import { decodeConfig, parseConfigSource, refuseSize } from "../../../src/core/config/source.ts"

const quiet = { onWarning: () => {} }

function refusal(run: () => unknown): ConfigError {
  try {
    run()
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error("no ConfigError")
}

const load =
  (yaml: string, env: Record<string, string> = {}) =>
  () =>
    loadConfigFromString(yaml, { ...quiet, env })

const version = (pv: string) =>
  loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: ${pv}\n`, quiet).transition
    ?.policyVersion

describe("the size limit", () => {
  it("is over 1 MiB: a config of exactly 1 MiB is read", () => {
    expect(() => refuseSize(1 << 20, "mycelium.yaml")).not.toThrow()
    expect(() => refuseSize((1 << 20) + 1, "mycelium.yaml")).toThrow(ConfigError)
    // A comment line filling the 1 MiB, with its newline.
    const text = `#${"x".repeat((1 << 20) - 2)}\n`
    expect(parseConfigSource(text).value).toEqual({})
  })
})

describe("a config file's bytes that are not UTF-8", () => {
  const bytes = (...parts: (string | number[])[]) =>
    new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...new TextEncoder().encode(p)] : p)))

  it("name the invalid byte past a character of four bytes (a surrogate pair)", () => {
    const e = refusal(() => decodeConfig(bytes("agent: 😀 caf", [0xe9], "\n"), "f.yaml"))
    expect(e.message).toContain("byte 0xe9")
    expect([e.line, e.column]).toEqual([1, 14])
  })

  it("are at their column after a UTF-8 BOM, which is no column", () => {
    const e = refusal(() => decodeConfig(bytes([0xef, 0xbb, 0xbf], "a: caf", [0xe9], "\n"), "f.yaml"))
    expect([e.line, e.column]).toEqual([1, 7])
  })
})

describe("where an error points", () => {
  it("a key YAML reads as a number or boolean is located at its own key", () => {
    // (Such a tool name is refused where it stands: source-defects-fixed.test.ts.)
    for (const name of ["1", "true", "1.5"]) {
      const e = refusal(load(`tools:\n  t:\n    ${name}: read\n`))
      expect(e.path).toEqual(["tools", "t", name])
      expect([e.line, e.column]).toEqual([3, 5])
    }
  })

  it("a store that needs a factory is reported at its storage key, with line and column", async () => {
    const config = loadConfigFromString(
      "transition: {agent_id: a, policy_version: v}\naction_ledger:\n  storage: file\n  path: l.json\n  tools: [t]\ntools: {t: {side_effect_class: read}}\n",
      quiet,
    )
    const tool = config.apply("t", async () => 1)
    const e = await tool({}).catch((err: unknown) => err)
    expect(e).toBeInstanceOf(ConfigError)
    expect(e).toMatchObject({ path: ["action_ledger", "storage"], line: 3, column: 12 })
    expect((e as ConfigError).message).toContain("mycelium.yaml:3:12 at 'action_ledger.storage'")
  })
})

describe("tags and keys as PyYAML's safe_load reads them", () => {
  it("!!null is null, whatever its text", () => {
    expect(parseConfigSource("a: !!null x\nb: !!null\n").value).toEqual({ a: null, b: null })
  })

  it("!!seq on a mapping and !!map on a scalar or a list are refused, as PyYAML's constructors refuse them", () => {
    for (const [yaml, tag] of [
      ["a: !!seq {x: 1}\n", "!!seq"],
      ["a: !!map x\n", "!!map"],
      ["a: !!map [x]\n", "!!map"],
    ]) {
      const e = refusal(() => parseConfigSource(yaml as string))
      expect(e.message).toContain(`tag '${tag}' is not supported`)
      expect(e).toMatchObject({ path: ["a"], line: 1 })
    }
  })

  it("a tagged key is read as PyYAML reads it, and a key with an unknown tag is refused", () => {
    expect(parseConfigSource("a:\n  !!int 010: x\n").value).toEqual({ a: { "8": "x" } })
    const e = refusal(() => parseConfigSource("a:\n  !foo k: 1\n"))
    expect(e.message).toContain("tag '!foo' is not supported")
    expect(e).toMatchObject({ path: ["a"], line: 2 })
  })

  it("keys ~ and '' are one key (both build the key ''): the second is a duplicate, not silently dropped", () => {
    const e = refusal(() => parseConfigSource("a:\n  ~: 1\n  '': 2\n"))
    expect(e.message).toContain("duplicate key '' (first at line 2)")
    expect([e.line, e.column]).toEqual([3, 3])
  })

  it.each([
    ["on", "True"],
    ["On", "True"],
    ["ON", "True"],
    ["-5", "-5"],
    ["-010", "-8"],
    ["-0x1f", "-31"],
    ["-1:30", "-90"],
    ["2026-07-01T12:00:00+23:59", "2026-07-01 12:00:00+23:59"],
    ["2026-07-01T12:00:00-23:59", "2026-07-01 12:00:00-23:59"],
  ])("policy_version: %s is keyed as the original's str() of it, %s", (pv, str) => {
    expect(version(pv)).toBe(str)
  })
})

describe("variables", () => {
  it("expandEnv expands strings inside lists too", () => {
    const source = parseConfigSource("a: 1\n")
    expect(expandEnv({ a: ["$X", { b: "${X}-y" }] }, { X: "1" }, source)).toEqual({
      a: ["1", { b: "1-y" }],
    })
  })

  it("an unset variable in a key=value dsn or in a token is not named (it may be part of the password)", () => {
    for (const [yaml, key] of [
      ["action_ledger:\n  storage: postgres\n  dsn: host=db password=ab$Cdef\n", "dsn"],
      ["action_ledger:\n  storage: upstash\n  url: https://x\n  token: ab://c$Tokrest\n", "token"],
    ] as const) {
      const e = refusal(load(yaml))
      expect(e.path).toEqual(["action_ledger", key])
      expect(e.message).toContain("not named: it may be part of a password")
      expect(e.message).not.toMatch(/Cdef|Tokrest/)
    }
  })

  it("pythonExpandVars takes any \\w name, as os.path.expandvars does", () => {
    expect(pythonExpandVars("a$1b${2c}$3d", { "1b": "X", "2c": "Y" })).toBe("aXY$3d")
  })

  it("pythonStrip is Python's str.strip(): U+FEFF stays, \\x1c-\\x1f and NEL go", () => {
    expect(pythonStrip("\ufeffk\x1c\x1f\x85")).toBe("\ufeffk")
    expect(pythonStrip("\x1c\u3000k\u00a0")).toBe("k")
  })
})

describe("a variable reference where variables do not expand", () => {
  it("inside a signing key is refused without echoing any part of it, the reference included", () => {
    for (const key of ["k$RECEIPT_KEY-2", "pre${RECEIPT_KEY}post"]) {
      const e = refusal(load(`audit_receipt:\n  signing_key: "${key}"\n`))
      expect(e.path).toEqual(["audit_receipt", "signing_key"])
      expect(e.message).not.toContain("RECEIPT_KEY")
      expect(e.message).toContain("signing_key_env")
    }
  })

  it("as the whole of a *_env name says the key takes the variable's name itself", () => {
    for (const [yaml, path] of [
      ["audit_receipt:\n  signing_key_env: ${KEY}\n", ["audit_receipt", "signing_key_env"]],
      ["action_ledger:\n  storage: redis\n  url_env: ${KEY}\n", ["action_ledger", "url_env"]],
    ] as const) {
      const e = refusal(load(yaml, { KEY: "k" }))
      expect(e.path).toEqual(path)
      expect(e.message).toContain("'${KEY}' is not expanded here")
      expect(e.message).toContain(`'${path[1]}' takes the variable's name itself`)
    }
  })
})
