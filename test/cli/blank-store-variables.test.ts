// A store variable set blank (`MYCELIUM_LEDGER_FILE=" "`) named a file " ": an operator's list showed no rows and a
// release looked for the row in a ledger no worker writes, where a blank --file is a usage error (exit 2). Blank
// store variables are usage errors too; an empty one still counts as unset, as an empty MYCELIUM_TOKEN does.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-blank-vars-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// Killed after 10 s: a server that starts instead shows as a null exit code.
const run = cliRunner(cwd, { timeout: 10_000 })
const file = join(cwd, "ledger.json")
const UNSET = {
  MYCELIUM_TOKEN: "",
  MYCELIUM_LEDGER_FILE: "",
  MYCELIUM_REDIS_URL: "",
  MYCELIUM_POSTGRES_DSN: "",
  MYCELIUM_TASK_FILE: "",
}

beforeAll(async () => {
  const now = Date.now() / 1000
  await new FileLedgerStorage(file).set({
    ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 10 }, now - 50),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
})

const RELEASE = [
  "transitions",
  "release",
  "pay:1",
  "--verified",
  "not-executed",
  "--by",
  "ops",
  "--reason",
  "r",
]

describe("a blank store variable is a usage error, as a blank store flag is", () => {
  it.each([
    ["MYCELIUM_LEDGER_FILE", " ", ["transitions", "list"]],
    ["MYCELIUM_LEDGER_FILE", "\t", RELEASE],
    ["MYCELIUM_LEDGER_FILE", "  ", ["transitions", "mark-dead", "pay:1", "--by", "ops", "--reason", "r"]],
    ["MYCELIUM_LEDGER_FILE", " ", ["serve", "--port", "0"]],
    ["MYCELIUM_REDIS_URL", " ", ["transitions", "list", "--stuck"]],
    ["MYCELIUM_POSTGRES_DSN", " \t ", ["transitions", "show", "pay:1"]],
    ["MYCELIUM_TASK_FILE", " ", ["tasks", "list"]],
    // Invisible characters only: trim() keeps them, and the release went to a file named by a zero-width space.
    ["MYCELIUM_LEDGER_FILE", "\u200b", RELEASE],
    ["MYCELIUM_TASK_FILE", "\u2060\ufeff", ["tasks", "list"]],
  ])("%s=%j: %j exits 2, naming the variable", (name, value, args) => {
    const r = run(args, { ...UNSET, [name]: value })
    expect(r.code, r.out).toBe(2)
    expect(r.err).toBe(
      `mycelium: ${name} is blank (an unset variable?): name the store, or unset it\n(mycelium --help lists the commands)\n`,
    )
    expect(r.out).toBe("")
  })

  it("nothing was written: no file named by blanks, the row still stuck", () => {
    expect(readdirSync(cwd).filter((f) => !f.trim())).toEqual([])
    const r = run(["transitions", "list", "--stuck", "--file", file], UNSET)
    expect(r.code, r.err).toBe(0)
    expect(r.out.split("\n").filter((l) => l.startsWith("pay:1  pay  UNKNOWN"))).toHaveLength(1)
  })

  it("a store flag wins over a blank variable, which is then not read", () => {
    const r = run(["transitions", "list", "--file", file], { ...UNSET, MYCELIUM_LEDGER_FILE: " " })
    expect(r.code, r.err).toBe(0)
    expect(r.out).toMatch(/^pay:1 {2}pay {2}UNKNOWN/)
  })

  it("an empty variable is still unset: the default file is read", () => {
    const r = run(["transitions", "list"], UNSET)
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain("no transitions found in file .mycelium/ledger.json")
    const tasks = run(["tasks", "list"], UNSET)
    expect(tasks.code, tasks.err).toBe(0)
    expect(tasks.out).toContain("no tasks found in file .mycelium/tasks.json")
    expect(existsSync(join(cwd, " "))).toBe(false)
  })
})
