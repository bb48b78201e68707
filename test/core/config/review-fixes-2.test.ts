// biome-ignore-all lint/suspicious/noTemplateCurlyInString: YAML text that references ${VAR}
// Config readings that differed from the Python original's PyYAML or escaped as something else than a ConfigError
// at its line: explicit tags, `0b_`, a `$` inside a DSN's password, a libpq DSN, `poll_timeout: .inf`, the editor
// schema, and line breaks PyYAML and this parser read differently.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { configJsonSchema } from "../../../src/core/config/json-schema.ts"
import { refusal as refusedWith } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: {} }
// This file's variables, not the process environment.
const refusal = (yaml: string, env: Record<string, string> = {}) => refusedWith(yaml, env)
const T = "transition:\n  agent_id: a\n  policy_version: v1\n"

const version = (pv: string) =>
  loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: ${pv}\n`, quiet).transition
    ?.policyVersion

describe("an explicit tag on agent_id or policy_version", () => {
  // str(yaml.safe_load(...)["transition"]["policy_version"]) in PyYAML 6.0.3.
  it.each([
    ["!!float 1", "1.0"],
    ["!!float '1'", "1.0"],
    ["!!float 1e3", "1000.0"],
    ["!!float 1e400", "inf"],
    ["!!float --1", "1.0"],
    ["!!float .NaN", "nan"],
    ["!!float 1:30.5", "90.5"],
    ["!!int '017'", "15"],
    ["!!int 0o17", "15"],
    ["!!int 0x_1f", "31"],
    ["!!int 0b1_0", "2"],
    ["!!int 1:30", "90"],
    ["!!int 99999999999999999999999", "99999999999999999999999"],
    ["!!bool yes", "True"],
    ["!!str 1.0", "1.0"],
    ["!<tag:yaml.org,2002:str> 5", "5"],
  ])("%s is keyed as the original's str() of it, %s", (pv, str) => {
    expect(version(pv)).toBe(str)
  })

  it.each([
    ["!!binary aGVsbG8=", "tag '!!binary' is not supported"],
    ["!!timestamp 2020-01-01", "tag '!!timestamp' is not supported"],
    ["!foo v1", "tag '!foo' is not supported"],
    ["!!python/str x", "tag '!!python/str' is not supported"],
    ["!!int 0b", "fails on this value as !!int"],
    ["!!int 1e3", "fails on this value as !!int"],
    ["!!float 0x10", "fails on this value as !!float"],
    ["!!bool x", "fails on this value as !!bool"],
  ])("%s is a ConfigError at its line and column (PyYAML refuses or this package does)", (pv, message) => {
    const e = refusal(`transition:\n  agent_id: a\n  policy_version: ${pv}\n`)
    expect(e.message).toContain(message)
    expect(e).toMatchObject({ path: ["transition", "policy_version"], line: 3 })
    expect(e.column).toBeGreaterThan(17)
  })

  it("a tag anywhere else is read as PyYAML reads it too, and an unknown one is refused at its key", () => {
    const c = loadConfigFromString(
      `${T}  lease_ttl: !!int 010\n  reclaim_requires_death_signal: !!bool off\n`,
      quiet,
    )
    expect([c.transition?.leaseTtl, c.transition?.reclaimRequiresDeathSignal]).toEqual([8, false])
    expect(refusal("tools:\n  t:\n    side_effect_class: !secret read\n")).toMatchObject({
      path: ["tools", "t", "side_effect_class"],
      line: 3,
      column: 32,
    })
    expect(refusal("tools: !!set {a: null}\n").message).toContain("'!!set' is not supported")
  })
})

describe("a plain 0b_ or 0x_, which PyYAML fails on", () => {
  it.each([
    ["agent_id", "0x_"],
    ["policy_version", "0b_"],
    ["policy_version", "-0b__"],
  ])("%s: %s is a ConfigError saying to quote it, not a SyntaxError", (key, value) => {
    const yaml = `transition:\n  agent_id: a\n  policy_version: v\n`.replace(
      key === "agent_id" ? "agent_id: a" : "policy_version: v",
      `${key}: ${value}`,
    )
    const e = refusal(yaml)
    expect(e).toMatchObject({ path: ["transition", key], line: key === "agent_id" ? 2 : 3 })
    expect(e.message).toMatch(/quote it/)
  })
})

describe("an unset variable inside a url's or dsn's password", () => {
  it("is not named (it is the rest of the password) and the message says how to write a literal '$'", () => {
    const e = refusal(
      "action_ledger:\n  storage: postgres\n  dsn: postgres://app:Tr0ub4dor$CorrectHorseBattery@db.internal:5432/app\n",
    )
    expect(e.message).not.toContain("CorrectHorseBattery")
    expect(e.message).toContain("'$$'")
    expect(e).toMatchObject({ path: ["action_ledger", "dsn"], line: 3, column: 8 })
    expect(
      refusal("action_ledger:\n  storage: upstash\n  url: https://x.io\n  token: abc$Secret\n").message,
    ).not.toContain("Secret")
  })

  it("is named where it is no password: the whole value, or the host", () => {
    expect(refusal("action_ledger:\n  storage: postgres\n  dsn: ${DATABASE_URL}\n").message).toContain(
      "environment variable 'DATABASE_URL' is not set",
    )
    expect(refusal("action_ledger:\n  storage: redis\n  url: redis://u:p@${HOST}:1\n").message).toContain(
      "'HOST'",
    )
  })
})

describe("a libpq key=value dsn", () => {
  it("is refused at its line, without repeating it (it holds the password)", () => {
    const e = refusal(
      'action_ledger:\n  storage: postgres\n  dsn: "host=127.0.0.1 port=5433 user=app password=s3cret dbname=app"\n',
    )
    expect(e).toMatchObject({ path: ["action_ledger", "dsn"], line: 3, column: 8 })
    expect(e.message).toContain("postgres://")
    expect(e.message).not.toContain("s3cret")
    const fromEnv = refusal("task_ledger:\n  storage: neon\n  dsn_env: PG\n", { PG: "host=h dbname=d" })
    expect(fromEnv).toMatchObject({ path: ["task_ledger", "dsn_env"], line: 3 })
    const ok = loadConfigFromString("action_ledger:\n  storage: postgres\n  dsn: postgresql://h/db\n", quiet)
    expect(ok.resolved.raw.action_ledger?.dsn).toBe("postgresql://h/db")
  })
})

describe("poll_timeout without a limit", () => {
  it.each(["null", ".inf", "~"])(
    "poll_timeout: %s is pollTimeout null, which the ledger takes",
    async (v) => {
      const c = loadConfigFromString(
        `${T}  poll_timeout: ${v}\naction_ledger:\n  tools: [t]\ntools:\n  t: {side_effect_class: read}\n`,
        quiet,
      )
      expect(c.transition?.pollTimeout).toBeNull()
      expect((await c.ledgerFor("t"))?.pollTimeout).toBeNull()
    },
  )

  it("a number still must be above 0, and the default stays 300", () => {
    expect(refusal(`${T}  poll_timeout: 0\n`).path).toEqual(["transition", "poll_timeout"])
    expect(refusal(`${T}  poll_timeout: -.inf\n`).path).toEqual(["transition", "poll_timeout"])
    expect(loadConfigFromString(T, quiet).transition?.pollTimeout).toBe(300)
  })
})

describe("the editor's JSON Schema agrees with the loader", () => {
  const schema = configJsonSchema() as { properties: Record<string, { properties: Record<string, unknown> }> }
  const transition = schema.properties.transition?.properties as Record<string, Record<string, unknown>>

  it("agent_id and policy_version take what YAML 1.2 reads as a number or boolean, not 0 or false", () => {
    for (const key of ["agent_id", "policy_version"]) {
      expect(transition[key]?.anyOf).toContainEqual({ type: "number" })
      expect(transition[key]?.anyOf).toContainEqual({ type: "boolean" })
      expect(transition[key]?.not).toEqual({ enum: [0, false] })
    }
    expect(
      loadConfigFromString("transition:\n  agent_id: 0x10\n  policy_version: true\n", quiet).transition,
    ).toMatchObject({ agentId: "16", policyVersion: "True" })
  })

  it("flush_on needs an item, poll_timeout takes null, other numbers are finite", () => {
    const flush = schema.properties.state_flush?.properties.flush_on as Record<string, unknown>
    expect(flush.minItems).toBe(1)
    expect(refusal("state_flush:\n  flush_on: []\n").message).toContain("all three")
    expect(transition.poll_timeout?.anyOf).toContainEqual({ type: "null" })
    expect(transition.presumed_dead_after?.maximum).toBe(Number.MAX_VALUE)
    expect(refusal(`${T}  presumed_dead_after: .inf\n`).path).toEqual(["transition", "presumed_dead_after"])
  })
})

describe("line breaks and a BOM", () => {
  it("a BOM is no column of the first line", () => {
    expect(refusal("\uFEFFprofil: production\n")).toMatchObject({ line: 1, column: 1 })
  })

  it("a lone CR breaks lines, as in YAML 1.2 and PyYAML", () => {
    const c = loadConfigFromString(`${T.replaceAll("\n", "\r")}tools: {}\r`, quiet)
    expect(c.transition?.policyVersion).toBe("v1")
    expect(refusal("profile: development\rtools:\r  t:\r    side_efect_class: read\r")).toMatchObject({
      line: 4,
      column: 5,
    })
  })

  it("NEL, U+2028 and U+2029, line breaks to PyYAML only, are refused at their line and column", () => {
    for (const ch of ["\u2028", "\u2029", "\u0085"]) {
      const e = refusal(`profile: development\n# note${ch}tools: {}\n`)
      expect(e).toMatchObject({ line: 2, column: 7 })
      expect(e.message).toContain("line break")
    }
  })
})
