// Joiners that are part of the text an operator reads (an emoji ZWJ sequence, ZWNJ in a Persian word, ZWJ after a
// Devanagari virama) print as they are: escaped, the id `transitions list` printed and an operator pasted into
// `transitions show` or `release` named no row. A joiner that hides (beside ASCII, doubled) is still escaped.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { clean } from "../../src/cli/style.ts"
import { cliRunner } from "./run-cli.ts"

const IDS = [
  "family-\u{1f468}\u200d\u{1f469}\u200d\u{1f467}",
  "dev-\u{1f468}\u{1f3fd}\u200d\u{1f4bb}",
  "flag-\u{1f3f3}\ufe0f\u200d\u{1f308}",
  "fa-\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
  "hi-\u0915\u094d\u200d\u0937",
  "he-\u05e9\u05dc\u05d5\u05dd-\u2764\ufe0f",
]

const cwd = mkdtempSync(join(tmpdir(), "mycelium-joined-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
const file = join(cwd, "ledger.json")

beforeAll(async () => {
  const s = new FileLedgerStorage(file)
  for (const id of IDS)
    await s.set({
      ...newEntry({ requestId: id, tool: "pay", owner: "w1", fence: 1 }, Date.now() / 1000 - 5),
      terminalOutcome: "UNKNOWN",
      status: "failed",
      sideEffectBoundary: "maybe_crossed",
    })
  await s.close()
})

describe("joiners inside a word or an emoji sequence", () => {
  it("clean() keeps them; beside ASCII, doubled or beside another hidden character they stay escaped", () => {
    for (const id of IDS) expect(clean(id)).toBe(id)
    expect(clean("pay\u200dA")).toBe("pay\\u200dA")
    expect(clean("\u{1f468}\u200da")).toBe("\u{1f468}\\u200da")
    expect(clean("\u{1f468}\u200d\u200d\u{1f469}")).toBe("\u{1f468}\\u200d\\u200d\u{1f469}")
    expect(clean("\u0645\u200b\u200c\u0645")).toBe("\u0645\\u200b\\u200c\u0645")
  })

  it("an id copied from `transitions list` names its row in show and release", () => {
    const listed = run(["transitions", "list", "--file", file])
    expect(listed.code, listed.err).toBe(0)
    const printed = listed.out
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("  ")[0] as string)
    expect(printed.sort()).toEqual([...IDS].sort())
    for (const id of printed) {
      const shown = run(["transitions", "show", id, "--file", file])
      expect(shown.code, shown.err).toBe(0)
      expect(shown.out).toContain(`request_id: ${id}\n`)
    }
    const released = run([
      ...["transitions", "release", printed[0] as string, "--file", file, "--fence", "1"],
      ...["--verified", "not-executed", "--by", "op", "--reason", "no charge"],
    ])
    expect(released.code, released.err).toBe(0)
  })
})
