// Config readings a third review found: a merge key under `%YAML 1.1` past the PyYAML reading of policy_version, a
// `$` in a DSN's query password named in the error, PyYAML's no-value spellings refused without saying why, a
// plain `=` that PyYAML fails on; and str() of inf and nan, kept through a smaller pythonStr.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal as refusedWith } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: {} }
// This file's variables, not the process environment.
const refusal = (yaml: string, env: Record<string, string> = {}) => refusedWith(yaml, env)

describe("a merge key", () => {
  it.each([
    ["%YAML 1.1\n---\ntransition:\n  <<: {policy_version: 1.0}\n  agent_id: a\n", "transition"],
    ["%YAML 1.1\n---\ntransition:\n  <<: [{policy_version: !!float 1}]\n  agent_id: a\n", "transition"],
    ["transition:\n  <<: {policy_version: 1.0}\n  agent_id: a\n", "transition"],
    ["transition: &t {agent_id: a, policy_version: v}\naction_ledger:\n  <<: *t\n", "action_ledger"],
  ])("is refused with its line and column, whatever the YAML version: %j", (yaml, section) => {
    const e = refusal(yaml)
    expect(e.detail).toMatch(/merge key '<<' \(write its keys out\)$/)
    expect(e.path).toEqual([section])
    expect([e.line, e.column]).toEqual([yaml.split("\n").findIndex((l) => l.includes("<<")) + 1, 3])
  })

  it("quoted, is refused too (no key here is called so)", () => {
    expect(refusal("transition:\n  '<<': x\n  agent_id: a\n  policy_version: v\n").detail).toMatch(/'<<'/)
  })
})

describe("an unset variable in a DSN's query", () => {
  it.each([
    "postgres://app@db.example.com:5432/app?password=s3cr$etPart",
    "postgres:///app?host=/var/run/pg&password=s3cr$etPart",
    "postgres://db.example.com/app?sslmode=require#s3cr$etPart",
  ])("is not named: %s", (dsn) => {
    const e = refusal(
      `transition: {agent_id: a, policy_version: v}\naction_ledger:\n  storage: postgres\n  dsn: "${dsn}"\n`,
    )
    expect(e.message).not.toContain("etPart")
    expect(e.detail).toMatch(/^a variable here is not set \(not named/)
  })

  it("is named in the host or path", () => {
    const e = refusal(
      "transition: {agent_id: a, policy_version: v}\naction_ledger:\n  storage: postgres\n  dsn: postgres://u@$DBHOST/app?sslmode=require\n",
    )
    expect(e.detail).toMatch(/^environment variable 'DBHOST' is not set/)
  })
})

describe("agent_id or policy_version that PyYAML reads as no value", () => {
  it.each(["no", "off", "No", "OFF", "0", "0.0", "~", "null"])("%s says to quote it", (v) => {
    const e = refusal(`transition:\n  agent_id: ${v}\n  policy_version: v\n`)
    expect(e.detail).toBe("PyYAML reads no value (False, 0, None) or fails on this value: quote it")
    expect([e.line, e.column]).toEqual([2, 13])
  })

  it("loads quoted", () => {
    const t = loadConfigFromString(
      "transition:\n  agent_id: 'no'\n  policy_version: 'off'\n",
      quiet,
    ).transition
    expect([t?.agentId, t?.policyVersion]).toEqual(["no", "off"])
  })
})

describe("a plain '=' as agent_id or policy_version", () => {
  it.each([
    ["transition:\n  agent_id: =\n  policy_version: v\n", 2, "agent_id"],
    ["transition:\n  agent_id: a\n  policy_version: =\n", 3, "policy_version"],
  ])("is refused, as PyYAML fails on it (its !!value): %j", (yaml, line, key) => {
    const e = refusal(yaml)
    expect(e.detail).toMatch(/fails on this value: quote it$/)
    expect([e.line, e.path]).toEqual([line, ["transition", key]])
  })

  it("quoted or tagged is text", () => {
    const t = loadConfigFromString(
      "transition:\n  agent_id: '='\n  policy_version: !!str =\n",
      quiet,
    ).transition
    expect([t?.agentId, t?.policyVersion]).toEqual(["=", "="])
  })
})

describe("str() of a float agent_id or policy_version", () => {
  it.each([
    [".inf", "inf"],
    ["-.inf", "-inf"],
    [".nan", "nan"],
    ["!!float -1e400", "-inf"],
    ["1.5e-5", "1.5e-05"],
  ])("%s is %s, as Python writes it", (v, text) => {
    expect(
      loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: ${v}\n`, quiet).transition
        ?.policyVersion,
    ).toBe(text)
  })
})
