// Bidi controls and other invisible format characters in a row (Trojan Source): a request id or tool name holding
// U+202E printed raw reorders what an operator reads, and one holding U+200B looks like another row's. Every
// operator view shows them as \uXXXX, and a printed command still names the row exactly.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { shellQuote } from "../../src/cli/ledger-access.ts"
import { clean, printJson } from "../../src/cli/style.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const INVISIBLE = [
  "\u061c",
  "\u200b",
  "\u200c",
  "\u200d",
  "\u200e",
  "\u200f",
  "\u202a",
  "\u202b",
  "\u202c",
  "\u202d",
  "\u202e",
  "\u2060",
  "\u2066",
  "\u2067",
  "\u2068",
  "\u2069",
  "\ufeff",
]
const HIDDEN = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u2028\u2029]|\u{e0041}/u
// "pay-refund" on screen, reversed by the override; the tool name hides a zero-width space.
const ID = "pay-\u202ednufer\u202c-42"
const TOOL = "send\u200b_payment"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-invisible-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
const file = join(cwd, "ledger.json")
const tasksFile = join(cwd, "tasks.json")

beforeAll(async () => {
  await new FileLedgerStorage(file).set({
    ...newEntry({ requestId: ID, tool: TOOL, owner: "w\u20661", fence: 1 }, Date.now() / 1000 - 5),
    terminalOutcome: "UNKNOWN",
    status: "failed",
    sideEffectBoundary: "maybe_crossed",
    error: "declined\u202e by provider",
  })
  const tasks = new TaskLedger({ storage: new FileTaskStore(tasksFile) })
  const job = tasks.task({ name: "imp\u202eort", idFrom: ["b"] }, async (a: { b: string }) => a.b)
  await job({ b: "b\u200b1" })
})

describe("clean()", () => {
  it("shows each bidi control and invisible format character as \\uXXXX, tag characters as \\UXXXXXXXX", () => {
    for (const c of INVISIBLE)
      expect(clean(`a${c}b`)).toBe(`a\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}b`)
    expect(clean("a\u2028b\u{e0041}")).toBe("a\\u2028b\\U000e0041")
    // Control characters keep their \xNN form; visible text is untouched.
    expect(clean("x\u001b\u0085é 🎉")).toBe("x\\x1b\\x85é 🎉")
  })

  it("--json escapes them too, and reads back as the same value", () => {
    const lines: string[] = []
    vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line))
    const value = { id: ID, tool: TOOL, tag: "x\u{e0041}", sep: "\u2028" }
    printJson(value)
    vi.restoreAllMocks()
    expect(lines[0]).not.toMatch(HIDDEN)
    expect(lines[0]).toContain("\\u202e")
    expect(lines[0]).toContain("\\udb40\\udc41")
    expect(JSON.parse(lines[0] as string)).toEqual(value)
  })

  it("a shell word for such an id is a $'..' word of its UTF-8 bytes", () => {
    expect(shellQuote("a\u202eb")).toBe("$'a\\xe2\\x80\\xaeb'")
    expect(shellQuote("a\u200bb'")).toBe("$'a\\xe2\\x80\\x8bb\\''")
  })
})

describe("operator views of a row holding bidi and zero-width characters", () => {
  it("list, show, --json, release, mark-dead, not-found and tasks print none of them raw", () => {
    const outputs = {
      list: run(["transitions", "list", "--file", file]),
      stuck: run(["transitions", "list", "--stuck", "--file", file]),
      show: run(["transitions", "show", ID, "--file", file]),
      json: run(["transitions", "show", ID, "--json", "--file", file]),
      missing: run(["transitions", "show", "nope\u202e", "--file", file]),
      markDead: run([
        ...["transitions", "mark-dead", ID, "--file", file, "--override-heartbeat"],
        ...["--by", "op\u2067s", "--reason", "gone"],
      ]),
      tasks: run(["tasks", "list", "--file", tasksFile]),
      taskShow: run(["tasks", "show", "imp\u202eort:b=b\u200b1", "--file", tasksFile]),
      release: run([
        ...["transitions", "release", ID, "--file", file, "--verified", "not-executed"],
        ...["--by", "op\u2067s", "--reason", "no charge"],
      ]),
    }
    for (const [name, r] of Object.entries(outputs)) {
      expect(r.out, name).not.toMatch(HIDDEN)
      expect(r.err, name).not.toMatch(HIDDEN)
    }
    expect(outputs.list.out).toContain("pay-\\u202ednufer\\u202c-42  send\\u200b_payment")
    expect(outputs.show.out).toContain("error: declined\\u202e by provider")
    expect(JSON.parse(outputs.json.out)).toMatchObject({ request_id: ID, tool: TOOL })
    expect(outputs.missing.code).toBe(1)
    expect(outputs.missing.err).toContain("nope\\u202e")
    // A refusal quotes the id too.
    expect(outputs.markDead.code).toBe(1)
    expect(outputs.markDead.err).toContain("request 'pay-\\u202ednufer\\u202c-42'")
    expect(outputs.release.code, outputs.release.err).toBe(0)
    expect(outputs.release.out).toContain("released pay-\\u202ednufer\\u202c-42 (send\\u200b_payment)")
    expect(outputs.tasks.out).toContain("imp\\u202eort:b=b\\u200b1  imp\\u202eort")
    expect(outputs.taskShow.code, outputs.taskShow.err).toBe(0)
  })

  it("the --stuck hint names the row exactly when pasted into a shell", async () => {
    const stuck = join(cwd, "stuck.json")
    await new FileLedgerStorage(stuck).set({
      ...newEntry({ requestId: ID, tool: TOOL, owner: "w1", fence: 1 }, Date.now() / 1000 - 5),
      terminalOutcome: "UNKNOWN",
      status: "failed",
      sideEffectBoundary: "maybe_crossed",
    })
    const list = run(["transitions", "list", "--stuck", "--file", stuck])
    const hint = list.out.split("\n").find((l) => l.includes("next:")) ?? ""
    expect(hint).toContain("release $'pay-\\xe2\\x80\\xaednufer\\xe2\\x80\\xac-42' --fence 1")
    const command = hint
      .replace(/^.*?then: mycelium /, "")
      .replace("completed|not-executed", "not-executed")
      .replace("--reason ...", "--reason 'no charge'")
    const [node, pre] = cliCommand()
    const r = spawnSync(node, [...pre, ...splitWords(command)], { cwd, encoding: "utf8" })
    expect(r.status, r.stderr).toBe(0)
    expect((await new FileLedgerStorage(stuck).get(ID))?.operatorResolution).toBe("not_executed")
  })

  it("doctor prints a configured path holding one escaped", () => {
    writeFileSync(
      join(cwd, "m.yaml"),
      "action_ledger:\n  storage: file\n  path: ./le\u202edger.json\n  tools: [pay]\n",
    )
    const r = run(["doctor", "-c", "m.yaml"])
    expect(r.out + r.err).not.toMatch(HIDDEN)
    expect(r.out).toContain("le\\u202edger.json")
  })
})

/** The words bash reads from `command` (its `$'..'` and '..' quoting). */
function splitWords(command: string): string[] {
  const r = spawnSync("bash", ["-c", `for w in ${command}; do printf '%s\\0' "$w"; done`], {
    encoding: "utf8",
  })
  return r.stdout.split("\0").slice(0, -1)
}
