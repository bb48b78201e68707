// A value the config takes as text is text to PyYAML (the original's reader) only when no YAML 1.1 resolver takes it:
// a Redis `prefix: on` is the prefix "True" there and "on" here (two workers sharing Redis would use two ledgers),
// `id_from: [yes]` is [True]. Such a plain scalar is refused at its key path, line and column, as a name is.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {} }
const message = "PyYAML or YAML 1.2 reads this value as no text: quote it"

describe("a plain text value PyYAML reads as no text", () => {
  it("a Redis prefix: on", () => {
    const e = refusal("action_ledger:\n  storage: redis\n  url: redis://localhost\n  prefix: on\n")
    expect(e).toMatchObject({ path: ["action_ledger", "prefix"], line: 4, column: 11 })
    expect(e.message).toContain(message)
  })

  it("an item of tasks.t.id_from: [yes], and through an alias", () => {
    const e = refusal("tasks:\n  t:\n    id_from: [a, yes]\n")
    expect(e).toMatchObject({ path: ["tasks", "t", "id_from", 1], line: 3, column: 18 })
    expect(e.message).toContain(message)
    const alias = refusal("tasks:\n  t:\n    id_from: &l [Off]\n  u:\n    id_from: *l\n")
    expect(alias).toMatchObject({ path: ["tasks", "t", "id_from", 0], line: 3, column: 18 })
  })

  it.each(["010", "1.0", "~", "2026-01-01", "1_000", "1:30", "off"])("a string field: path: %s", (v) => {
    const e = refusal(`action_ledger:\n  storage: file\n  path: ${v}\n`)
    expect(e).toMatchObject({ path: ["action_ledger", "path"], line: 3, column: 9 })
  })

  it("the text of a date, an enum value and a scope key", () => {
    expect(refusal("tools:\n  t:\n    request_id_from: 2026-01-01\n").message).toContain(message)
    expect(refusal("action_ledger: {on_args_drift: off}\n")).toMatchObject({
      path: ["action_ledger", "on_args_drift"],
      line: 1,
      column: 32,
    })
    const scope = refusal("transition:\n  agent_id: a\n  policy_version: '1'\n  scope_from: {node: null}\n")
    expect(scope.path).toEqual(["transition", "scope_from", "node"])
  })

  it("quoted, tagged and ordinary values load; a $VAR's value is text", () => {
    const config = loadConfigFromString(
      "transition: {agent_id: yes, policy_version: 1.0}\n" +
        "action_ledger:\n  storage: redis\n  url: $URL\n  prefix: 'on'\n  on_args_drift: 'off'\n" +
        "task_ledger: {storage: file, path: ./data/2026-01-01.jsonl}\n" +
        "tools:\n  t: {request_id_from: true_up, provider_idempotency_key_param: 1password}\n" +
        "  u: {ledger: true, side_effect_class: read, request_id_from: !!str 010, protect: {entity_param: https://x.example/a}}\n" +
        "tasks:\n  k: {id_from: ['yes', \"2026-01-01\", on_call, 2026-1-1]}\n",
      { ...quiet, env: { URL: "redis://localhost" } },
    )
    expect(config.transition).toMatchObject({ agentId: "True", policyVersion: "1.0" })
    expect(config.tools.get("u")?.binding).toMatchObject({ requestIdFrom: "010" })
    expect(config.tools.get("u")?.protect).toEqual({ entityParam: "https://x.example/a" })
    expect(config.tasks.get("k")?.idFrom).toEqual(["yes", "2026-01-01", "on_call", "2026-1-1"])
  })

  it("a number or boolean key keeps the schema's own refusal", () => {
    const e = refusal("transition: {agent_id: a, policy_version: '1', reclaim_requires_death_signal: no}\n")
    expect(e.message).not.toContain(message)
  })
})
