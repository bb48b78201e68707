// Tool and task names inside lists (action_ledger.tools, task_ledger.tasks, registry.allowed) are names as much as the
// keys under `tools:` are. PyYAML reads `[yes]` as [True] (`1_000` as 1000, `2026-01-01` as a date), which no
// function's name equals: the original would run `yes` with no ledger (or refuse it as not allowed) where this package
// ledgers (or allows) it, and a TS and a Python worker sharing a ledger would disagree. Such an item is refused at its
// line and column, as the same name under `tools:` is.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {} }
const message = "PyYAML or YAML 1.2 reads this name as no text: quote it"

describe("a name PyYAML reads as no text, inside a list of tool or task names", () => {
  it.each(["yes", "on", "Off", "1_000", "2026-01-01", "1:30", "null", "="])(
    "action_ledger.tools: [a, %s]",
    (name) => {
      const e = refusal(`action_ledger:\n  storage: memory\n  tools: [a, ${name}]\n`)
      expect(e).toMatchObject({ path: ["action_ledger", "tools", 1], line: 3, column: 14 })
      expect(e.message).toContain(message)
    },
  )

  it("task_ledger.tasks and registry.allowed, in block style", () => {
    const tasks = refusal("task_ledger:\n  tasks:\n    - t\n    - yes\n")
    expect(tasks).toMatchObject({ path: ["task_ledger", "tasks", 1], line: 4, column: 7 })
    expect(tasks.message).toContain(message)
    // The original's allowlist is {True}: it refuses the tool `yes` this package would allow.
    const allowed = refusal("registry:\n  allowed: [yes]\ntools:\n  'yes': {}\n")
    expect(allowed).toMatchObject({ path: ["registry", "allowed", 0], line: 2, column: 13 })
  })

  it("through an alias: of the item, and of the whole list", () => {
    const item = refusal("tools:\n  t:\n    request_id_from: &n on\naction_ledger: {tools: [t, *n]}\n")
    // At the anchored scalar, which is what to quote.
    expect(item).toMatchObject({ path: ["action_ledger", "tools", 1], line: 3, column: 25 })
    const list =
      "tasks:\n  t:\n    id_from: &l [2026-01-01]\nregistry: {allowed: *l}\ntools: {'2026-01-01': {}}\n"
    expect(refusal(list)).toMatchObject({ path: ["registry", "allowed", 0], line: 3, column: 18 })
  })

  it("a name that is text to both loads: quoted, tagged !!str, or no resolver takes it; an alias to such a name too", () => {
    const config = loadConfigFromString(
      "action_ledger: {storage: memory, tools: ['yes', !!str on, true_up, 2026-1-1, &a \"1_000\", *a]}\n" +
        "task_ledger: {tasks: [&b t, *b]}\nregistry: {allowed: ['yes', on_call]}\n" +
        "tools: {'yes': {side_effect_class: read}, on_call: {}}\n",
      quiet,
    )
    expect(config.ledgerFor("yes")).not.toBeNull()
    expect([...config.tools.keys()]).toEqual(["yes", "on_call", "on", "true_up", "2026-1-1", "1_000"])
  })

  it("an anchor of an earlier item of the same list is the one an alias names, not an older one", () => {
    const config = loadConfigFromString(
      // The older anchor is a field's name in a bounded schema: a key, which only tools: and tasks: check.
      "tools:\n  t:\n    bounded: {schema: {&a on: {type: string}}}\naction_ledger: {tools: [&a x, *a]}\n",
      quiet,
    )
    expect([...config.tools.keys()]).toEqual(["t", "x"])
  })
})

describe("a tool or task named =", () => {
  // PyYAML resolves a plain `=` to !!value, but as a mapping key SafeConstructor makes it the str "=":
  // yaml.safe_load("tools:\n  =: {}\n") == {'tools': {'=': {}}}. YAML 1.2 reads "=" too.
  it("loads as a key under tools: and tasks:", () => {
    const config = loadConfigFromString("tools:\n  =: {}\ntasks:\n  =: {}\n", quiet)
    expect([...config.tools.keys()]).toEqual(["="])
    expect([...config.tasks.keys()]).toEqual(["="])
  })
})
