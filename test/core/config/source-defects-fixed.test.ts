// Defects found by the mutation review of the config reader, fixed. The original (PyYAML) and this package must read
// one mycelium.yaml into the same transition keys: where they would not, the loader refuses, at the line and column.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {} }

describe("transition written as an alias of an anchored mapping", () => {
  // agent_id and policy_version are read as PyYAML reads them only where `transition` is written out: through the
  // alias `policy_version: 1.0` keyed as "1" (PyYAML: "1.0"), `010` as "10" ("8"), `yes` as "yes" ("True").
  const anchored = (agent: string, version: string) =>
    `tools:\n  t:\n    bounded:\n      schema:\n        f: &t {agent_id: ${agent}, policy_version: ${version}}\n` +
    "transition: *t\n"

  it.each([
    ["a", "1.0"],
    ["yes", "010"],
  ])("is refused at the alias (agent_id %s, policy_version %s)", (agent, version) => {
    const e = refusal(anchored(agent, version))
    expect(e).toMatchObject({ path: ["transition"], line: 6, column: 13 })
    expect(e.message).toContain("'transition' may not be an alias: write it out")
  })

  it("written out, the same mapping is read as PyYAML reads it", () => {
    const t = loadConfigFromString("transition: {agent_id: yes, policy_version: 010}\n", quiet).transition
    expect([t?.agentId, t?.policyVersion]).toEqual(["True", "8"])
  })

  it("tools and tasks are not aliases either (their names are checked where they are written)", () => {
    const yaml = "transition: &x {agent_id: a, policy_version: v}\ntools: *x\n"
    expect(refusal(yaml)).toMatchObject({ path: ["tools"], line: 2, column: 8 })
    expect(refusal(yaml.replace("tools", "tasks"))).toMatchObject({ path: ["tasks"], line: 2, column: 8 })
  })
})

describe("a tool or task name that PyYAML or YAML 1.2 reads as no text", () => {
  // PyYAML makes `on:` the key True, `null:` None, `1.0:` 1.0, `010:` 8, `2026-01-01:` a date; YAML 1.2 makes `1e3:`
  // 1000 and `true:` "true". The original looks a tool up by its function's name, which such a key never is.
  it.each([
    ["on", "on"],
    ["yes", "yes"],
    ["null", ""],
    ["~", ""],
    ["1.0", "1"],
    ["1", "1"],
    ["true", "true"],
    ["010", "10"],
    ["1_000", "1_000"],
    ["1e3", "1000"],
    ["2026-01-01", "2026-01-01"],
    ["!!int 7", "7"],
  ])("%s is refused at its key", (name, key) => {
    for (const section of ["tools", "tasks"]) {
      const e = refusal(`${section}:\n  ${name}: {}\n`)
      // A tagged key is where its text is, past the tag.
      expect(e).toMatchObject({ path: [section, key], line: 2, column: name.startsWith("!!") ? 9 : 3 })
      expect(e.message).toContain("reads this name as no text: quote it")
    }
  })

  it("quoted, tagged !!str or text to both, it is the name it spells", () => {
    const config = loadConfigFromString(
      "tools:\n  'on': {}\n  \"1.0\": {}\n  !!str yes: {}\n  2026-1-1: {}\n  send_email: {}\n",
      quiet,
    )
    expect([...config.tools.keys()]).toEqual(["on", "1.0", "yes", "2026-1-1", "send_email"])
  })
})
