// Two readings PyYAML (YAML 1.1, the original's reader) does not share with the YAML 1.2 parser here, refused at
// their line and column so that one file is never one config here and another (or none) there. Each case was checked
// with PyYAML 6 (yaml.safe_load).
// A number: PyYAML reads `1e3`, `1.0e3`, `1e+3`, `0o17` and `08` as text and `010` as 8, where YAML 1.2 reads 1000,
// 15, 8 and 10: `lease_ttl: 1e3` was a lease here and a string there.
// A tab: PyYAML fails on one as separation white space or inside a plain scalar ("found character '\t' that cannot
// start any token"); inside quotes, a block scalar's content or a comment it reads one as YAML 1.2 does.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: {} }
const T = "transition:\n  agent_id: a\n  policy_version: v1\n"

describe("a plain number PyYAML reads otherwise", () => {
  it.each([
    ["1e3", "text"],
    ["1.0e3", "text"],
    ["1e+3", "text"],
    ["0o17", "text"],
    ["08", "text"],
    ["010", "8"],
    ["012", "10"],
  ])("lease_ttl: %s is refused (PyYAML: %s)", (v, there) => {
    const e = refusal(`${T}  lease_ttl: ${v}\n`)
    expect(e).toMatchObject({ path: ["transition", "lease_ttl"], line: 4, column: 14 })
    expect(e.message).toContain(`PyYAML (the original's reader) reads this as ${there}: write plain decimals`)
  })

  it("in any section, and through an alias", () => {
    expect(refusal("runner:\n  max_tool_retries: 0o3\n")).toMatchObject({
      path: ["runner", "max_tool_retries"],
      line: 2,
      column: 21,
    })
    expect(
      refusal("action_ledger:\n  storage: redis\n  url: redis://h\n  in_flight_ttl: 6e5\n"),
    ).toMatchObject({ path: ["action_ledger", "in_flight_ttl"], line: 4, column: 18 })
    expect(refusal("runner:\n  max_llm_retries: &n 1e1\n  max_tool_retries: *n\n")).toMatchObject({
      path: ["runner", "max_llm_retries"],
      line: 2,
    })
  })

  it("a number both read alike loads", () => {
    const c = loadConfigFromString(
      `${T}  lease_ttl: 1.0e+3\n  poll_interval: .5\n  presumed_dead_after: +3600\n  poll_timeout: .inf\n` +
        "runner:\n  max_tool_retries: 00\n  max_llm_retries: 0x1\n",
      quiet,
    )
    expect(c.resolved.transition).toMatchObject({
      leaseTtl: 1000,
      pollInterval: 0.5,
      presumedDeadAfter: 3600,
    })
    expect(c.resolved.transition?.pollTimeout).toBeNull()
    expect(c.resolved.raw.runner).toEqual({ max_tool_retries: 0, max_llm_retries: 1 })
    // Quoted or tagged, a number is read as PyYAML reads it (or refused by the schema as text).
    expect(loadConfigFromString(`${T}  lease_ttl: !!float 1e3\n`, quiet).resolved.transition?.leaseTtl).toBe(
      1000,
    )
  })
})

describe("a tab PyYAML cannot scan", () => {
  it.each([
    ["after a colon", "profile:\tproduction\n", 1, 9],
    ["after a flow comma", "registry:\n  allowed: [a,\tb]\n", 2, 15],
    ["after a quoted value", `${T.slice(0, -3)}'v1'\t\n`, 3, 23],
    ["after a plain value", "profile: production\t\n", 1, 20],
    ["inside a plain value", "action_ledger:\n  storage: redis\n  url: redis://h\n  prefix: a\tb\n", 4, 12],
    ["before a comment", "profile: production\t# c\n", 1, 20],
    ["after a sequence's dash", "registry:\n  allowed:\n    -\ta\n", 3, 6],
    ["before a colon", "profile\t: production\n", 1, 8],
    ["on a blank line", "profile: production\n\t\nrunner: {}\n", 2, 1],
    ["after a flow mapping's colon", "runner: {max_llm_retries:\t1}\n", 1, 26],
    [
      "after a block scalar's indicator",
      "transition:\n  agent_id: |\t\n    x\n  policy_version: v1\n",
      2,
      14,
    ],
    ["after a tag", "profile: !!str\tproduction\n", 1, 15],
    ["on a plain value's next line", "transition:\n  agent_id: a\n    \tb\n  policy_version: v1\n", 3, 5],
  ])("%s is refused at its line and column", (_label, yaml, line, column) => {
    const e = refusal(yaml)
    expect(e).toMatchObject({ path: [], line, column })
    expect(e.message).toContain("a tab, which PyYAML (the original's reader) cannot read")
  })

  it("after a document marker or as indentation, as the YAML 1.2 parser refuses it too", () => {
    expect(refusal("---\tprofile: production\n")).toMatchObject({ line: 1, column: 4 })
    expect(refusal("runner:\n\tmax_llm_retries: 1\n")).toMatchObject({ line: 2, column: 1 })
  })

  it.each([
    ["inside single quotes", "'a\tb'", "a\tb"],
    ["inside double quotes", '"a\tb"', "a\tb"],
    ["leading a quoted value's next line", "'a\n    \tb'", "a b"],
    ["in a block scalar's content", "|\n    \ta\tb", "\ta\tb\n"],
    ["in a comment", "a # and\there\n# a\tcomment", "a"],
  ])("%s loads as there", (_label, value, text) => {
    const yaml = `transition:\n  agent_id: ${value}\n  policy_version: v1\n`
    expect(loadConfigFromString(yaml, quiet).transition?.agentId).toBe(text)
  })
})
