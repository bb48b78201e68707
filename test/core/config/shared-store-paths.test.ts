// Two kinds of store on one file (an action ledger and a task ledger, a state flush or the receipts) passed the
// loader; the task row then landed in the ledger's file and every later call failed as LedgerFileCorruptError,
// naming no key of mycelium.yaml. Refused at the second one's `path`, naming the first. Tools sharing one action
// ledger's file, and tasks one task ledger's, are fine.
import { describe, expect, it } from "vitest"
import { loadConfigFromString } from "../../../src/core/config/index.ts"
import { refusal } from "./refusal.ts"

const quiet = { onWarning: () => {}, env: {} }
const T = "transition:\n  agent_id: a\n  policy_version: v1\n"
const refusedIn = (baseDir: string | undefined, yaml: string) => {
  try {
    loadConfigFromString(yaml, { ...quiet, ...(baseDir !== undefined && { paths: { baseDir } }) })
  } catch (e) {
    return e
  }
  throw new Error("loaded")
}

describe("one file for two kinds of store", () => {
  it("action_ledger.path and task_ledger.path", () => {
    const e = refusal(
      `${T}action_ledger:\n  storage: file\n  path: /data/ledger.json\n  tools: [pay]\n` +
        "tools:\n  pay: {side_effect_class: irreversible}\n" +
        "task_ledger:\n  storage: file\n  path: /data/ledger.json\n" +
        "tasks:\n  job: {ledger: true}\n",
    )
    expect(e).toMatchObject({ path: ["task_ledger", "path"], line: 12, column: 9 })
    expect(e.message).toContain(
      "the task ledger is on the file of the action ledger ('action_ledger.path', line 6): give each its own path",
    )
  })

  it("compares paths once normalised, and relative ones against the base directory", () => {
    const yaml =
      "action_ledger:\n  storage: file\n  path: ./data//ledger.json\n" +
      "state_flush:\n  storage: file\n  path: data/x/../ledger.json\n"
    expect(refusal(yaml)).toMatchObject({ path: ["state_flush", "path"], line: 6 })
    const abs =
      "action_ledger:\n  storage: file\n  path: data/l.json\naudit_receipt:\n  storage: file\n  path: /w/data/l.json\n"
    expect(refusedIn("/w", abs)).toMatchObject({ path: ["audit_receipt", "path"], line: 6 })
    expect(() => loadConfigFromString(abs, { ...quiet, paths: { baseDir: "/elsewhere" } })).not.toThrow()
    expect(() => loadConfigFromString(abs, quiet)).not.toThrow()
  })

  it("a tool's or a task's own ledger path", () => {
    expect(
      refusal(
        `${T}action_ledger:\n  storage: file\n  path: /d/a.json\n` +
          "tools:\n  pay:\n    side_effect_class: read\n    ledger: {storage: file, path: /d/t.json}\n" +
          "task_ledger:\n  storage: file\n  path: /d/t.json\n",
      ),
    ).toMatchObject({ path: ["task_ledger", "path"], line: 13 })
    expect(
      refusal(
        "task_ledger:\n  storage: file\n  path: /d/t.json\n" +
          "tasks:\n  job:\n    ledger: {storage: file, path: /d/s.json}\n" +
          "state_flush:\n  storage: file\n  path: /d/s.json\n",
      ),
    ).toMatchObject({ path: ["state_flush", "path"], line: 9 })
  })

  it("tools on one action ledger's file, and tasks on one task ledger's, load", () => {
    const c = loadConfigFromString(
      `${T}action_ledger:\n  storage: file\n  path: /d/a.json\n  tools: [pay, refund]\n` +
        "tools:\n  pay: {side_effect_class: read}\n" +
        "  refund:\n    side_effect_class: read\n    ledger: {storage: file, path: /d/./a.json, on_args_drift: hard}\n" +
        "task_ledger:\n  storage: file\n  path: /d/t.json\n" +
        "tasks:\n  a: {ledger: true}\n  b:\n    ledger: {storage: file, path: /d/t.json}\n" +
        "state_flush:\n  storage: file\n  path: /d/s.json\naudit_receipt:\n  storage: file\n  path: /d/r.json\n" +
        "  signing_key: k\n",
      quiet,
    )
    expect(c.resolved.tools.get("refund")?.ledger?.storage.path).toBe("/d/./a.json")
  })
})
