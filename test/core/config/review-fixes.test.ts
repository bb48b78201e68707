// Config mistakes that loaded as something else than the Python original reads, or than what was written: a
// timestamp-shaped version keyed as its text (PyYAML keys its datetime's str()), a receipt or state path kept in
// memory, and an error about a listed tool pointing at line 1.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { parseConfigSource } from "../../../src/core/config/source.ts"
import { refusal as refusedWith } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: { K: "k" } }
// This file's variables, not the process environment.
const refusal = (yaml: string, env: Record<string, string> = quiet.env) => refusedWith(yaml, env)

describe("a timestamp-shaped agent_id or policy_version", () => {
  // str(yaml.safe_load(...)) in PyYAML 6.0.3 of each plain scalar: a date or a datetime, which the original keys.
  it.each([
    ["2026-07-01", "2026-07-01"],
    ["2026-07-01T12:00:00Z", "2026-07-01 12:00:00+00:00"],
    ["2026-07-01 12:00:00Z", "2026-07-01 12:00:00+00:00"],
    ["2026-07-01t12:00:00.5", "2026-07-01 12:00:00.500000"],
    ["2026-07-01T12:00:00+02:00", "2026-07-01 12:00:00+02:00"],
    ["2026-7-1 1:02:03", "2026-07-01 01:02:03"],
    ["2026-07-01T12:00:00.1234567-05:30", "2026-07-01 12:00:00.123456-05:30"],
    ["2026-07-01T12:00:00+5", "2026-07-01 12:00:00+05:00"],
    ["2026-07-01T12:00:00-00:00", "2026-07-01 12:00:00+00:00"],
    ["2026-07-01T12:00:00.000", "2026-07-01 12:00:00"],
    ["2026-07-01T12:00:00 +05:99", "2026-07-01 12:00:00+06:39"],
    ["2024-02-29", "2024-02-29"],
    ["2026-7-01", "2026-7-01"],
  ])("%s is keyed as the original's str() of it, %s", (text, str) => {
    const t = loadConfigFromString(`transition:\n  agent_id: ${text}\n  policy_version: ${text}\n`, quiet)
    expect([t.transition?.agentId, t.transition?.policyVersion]).toEqual([str, str])
    const quoted = loadConfigFromString(`transition:\n  agent_id: a\n  policy_version: '${text}'\n`, quiet)
    expect(quoted.transition?.policyVersion).toBe(text)
  })

  it.each([
    "2023-02-29",
    "0000-01-01",
    "2026-07-01T24:00:00",
    "2026-07-01T12:00:60",
    "2026-07-01T12:00:00+24:00",
  ])("%s, which PyYAML fails on, is a ConfigError at its line and column saying to quote it", (text) => {
    const e = refusal(`transition:\n  agent_id: a\n  policy_version: ${text}\n`)
    expect(e).toMatchObject({ path: ["transition", "policy_version"], line: 3, column: 19 })
    expect(e.message).toMatch(/quote it/)
  })

  it("!!str keeps the text and an alias reads as its anchor, as PyYAML reads them", () => {
    // str(yaml.safe_load(...)) in PyYAML 6.0.3: '2026-07-01T12:00:00Z', '2026-02-30', '8', '2026-07-01 12:00:00+00:00'.
    const tagged = loadConfigFromString(
      "transition:\n  agent_id: !!str 2026-07-01T12:00:00Z\n  policy_version: !!str 2026-02-30\n",
      quiet,
    )
    expect([tagged.transition?.agentId, tagged.transition?.policyVersion]).toEqual([
      "2026-07-01T12:00:00Z",
      "2026-02-30",
    ])
    // An anchor outside `transition` (read at the source level: the schema takes no such key here).
    const aliased = parseConfigSource(
      "x-release: &v 2026-07-01T12:00:00Z\nx-agent: &a 010\ntransition:\n  agent_id: *a\n  policy_version: *v\n",
    ).value as { transition: Record<string, unknown>; "x-release": unknown }
    expect([aliased.transition.agent_id, aliased.transition.policy_version]).toEqual([
      "8",
      "2026-07-01 12:00:00+00:00",
    ])
    // The anchor itself is left as written.
    expect(aliased["x-release"]).toBe("2026-07-01T12:00:00Z")
  })
})

describe("state_flush and audit_receipt keys that do not apply to their storage", () => {
  const T = "transition: {agent_id: a, policy_version: v}\n"
  it.each([
    [
      "audit_receipt path without storage: file",
      `${T}audit_receipt:\n  signing_key_env: K\n  path: r.jsonl\n`,
      4,
      "'path' does not apply to storage 'memory'",
    ],
    [
      "state_flush path without storage: file",
      "state_flush:\n  path: s.json\n",
      2,
      "'path' does not apply to storage 'memory'",
    ],
    [
      "state_flush database beside storage: file",
      "state_flush:\n  storage: file\n  path: s.json\n  database: x\n",
      4,
      "'database' does not apply to storage 'file'",
    ],
    [
      "state_flush binding beside storage: file",
      "state_flush:\n  storage: file\n  path: s.json\n  binding: y\n",
      4,
      "'binding' does not apply to storage 'file'",
    ],
    [
      "audit_receipt database beside storage: file",
      `${T}audit_receipt:\n  signing_key_env: K\n  storage: file\n  path: r.jsonl\n  database: db\n`,
      6,
      "'database' does not apply to storage 'file' (it takes: path, python_lock)",
    ],
    [
      "state_flush python_lock on indexeddb",
      "state_flush:\n  storage: indexeddb\n  python_lock: true\n",
      3,
      "'python_lock' does not apply to storage 'indexeddb'",
    ],
  ])("%s is a ConfigError at the key, as for action_ledger", (_name, yaml, line, message) => {
    const e = refusal(yaml)
    expect(e).toMatchObject({ line, column: 3 })
    expect(e.message).toContain(message)
  })

  it("each storage's own keys still load", () => {
    const c = loadConfigFromString(
      `${T}state_flush: {storage: indexeddb, database: d}\naudit_receipt: {signing_key_env: K, storage: file, path: r.jsonl}\n`,
      quiet,
    )
    expect(c.resolved.raw.audit_receipt?.path).toBe("r.jsonl")
  })
})

it("a tool listed only in action_ledger.tools is reported at its list entry, not at line 1", () => {
  const e = refusal(
    "transition:\n  agent_id: a\n  policy_version: v\naction_ledger:\n  storage: memory\n  tools: [ok, pay]\n" +
      "tools:\n  ok: {side_effect_class: read}\n",
  )
  expect(e).toMatchObject({ path: ["action_ledger", "tools", 1], line: 6, column: 15 })
  expect(e.message).toContain("tool 'pay' has ledger but no side_effect_class")
})
