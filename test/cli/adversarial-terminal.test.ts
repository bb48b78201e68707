// Rows are written by agents, and operators read them in a terminal. A tool name, request id or error holding
// escape sequences could retitle the terminal, clear it, or move the cursor to fake a "released" line above the
// real output. Every operator view prints such text inert (`\xNN`), whatever the command.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-adv-term-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const file = join(cwd, "ledger.json")
const run = cliRunner(cwd)
const EVIL_ID = "evil\r\nmycelium: released OK\u001b[1A"
const EVIL_TOOL = "pay\u001b]0;PWNED\u0007\u001b[2J"

beforeAll(async () => {
  const ledger = new ActionLedger({ storage: new FileLedgerStorage(file), onWarning: () => {} })
  const pay = ledger.tool(
    {
      name: EVIL_TOOL,
      binding: { agentId: "a", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
    },
    async (_args: { amount: number }, tx) =>
      tx.sideEffect(async () => {
        throw new Error("boom\nmycelium: all good\u001b[32m")
      }),
  )
  await expect(pay({ amount: 1 }, { requestId: EVIL_ID })).rejects.toThrow()
})

/** Nothing a terminal would act on: no ESC, BEL, CR or C1 control, and no line forged by the row. */
function inert(text: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
  expect(text.split("\n").some((l) => /^mycelium: (released OK|all good)/.test(l))).toBe(false)
}

describe("operator views of hostile rows", () => {
  it("list, show, release and refusals print agent-written text inert", () => {
    const outputs = [
      run(["transitions", "list", "--file", file]),
      run(["transitions", "list", "--stuck", "--file", file]),
      run(["transitions", "show", EVIL_ID, "--file", file]),
      run(["transitions", "show", "nope\u001b[2J", "--file", file]),
      run([
        "transitions",
        "release",
        EVIL_ID,
        "--verified",
        "completed",
        "--by",
        "op\u001b]0;x\u0007",
        "--reason",
        "r",
        "--file",
        file,
      ]),
    ]
    for (const r of outputs) {
      inert(r.out)
      inert(r.err)
    }
    // The text is still there to read, escaped.
    expect(outputs[0]?.out).toContain("pay\\x1b]0;PWNED\\x07\\x1b[2J")
    expect(outputs[2]?.out).toContain("evil\\x0d\\x0amycelium: released OK\\x1b[1A")
    expect(outputs[3]?.code).toBe(1)
  })
})
