// A request id can be any length (a `requestIdFrom` argument the model wrote), and a tool name, owner or task id
// too: the CLI printed them whole, so one 1 MB row buried the listing and the next steps an operator reads. Each is
// now shown clipped (300 characters, its length and its digest, so two ids cut alike print apart) and inert, as the
// tool boundary clips the text it shows; a next step names a long id as "$ID", and --json still prints it whole.
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-long-ids-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// --json prints the megabyte ids whole: more than spawnSync keeps by default.
const run = cliRunner(cwd, { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 })
const file = join(cwd, "ledger.json")
const tasks = join(cwd, "tasks.json")

// Hostile from its first byte: an escape sequence that clears the screen, then a megabyte.
const HUGE = `pay\u001b[2J\u001b]0;PWNED\u0007${"x".repeat(1024 * 1024)}`
// Ones a command line can still carry (an argument holds up to 128 KiB on Linux).
const LONG = `refund-${"y".repeat(100_000)}`
const SETTLE = `settle-${"s".repeat(100_000)}`
const TOOL = `pay_${"t".repeat(1024 * 1024)}`

/** The digest a clipped id is shown with: the first 32 hex digits of the SHA-256 of its UTF-8, as sha256sum prints. */
const sha = (id: string): string => createHash("sha256").update(id).digest("hex").slice(0, 32)

/** A row whose lease lapsed 10 s ago: UNKNOWN (its worker ended unsure), or still IN_FLIGHT (EXPIRED: it may be alive). */
async function row(id: string, tool: string, owner: string, unknown = true, at = file): Promise<void> {
  const now = Date.now() / 1000
  const entry = newEntry({ requestId: id, tool, owner, fence: 1, leaseUntil: now - 10 }, now - 50)
  await new FileLedgerStorage(at).set(
    unknown ? { ...entry, terminalOutcome: "UNKNOWN", sideEffectBoundary: "maybe_crossed" } : entry,
  )
}

beforeAll(async () => {
  await row(HUGE, TOOL, "w1")
  // No death signal: its release is refused with the next steps, which name the id.
  await row(LONG, "refund", "w2", false)
  await row(SETTLE, "refund", "w3", false)
  const ledger = new TaskLedger({ storage: new FileTaskStore(tasks), onWarning: () => {} })
  await ledger.task(`t${"k".repeat(5000)}`, async () => "ok")(
    {},
    { taskId: `import:${"z".repeat(1024 * 1024)}` },
  )
}, 60_000)

/** Bounded, inert output: nothing near the megabyte, no control character a terminal acts on. */
function shownBounded(text: string, max = 4000): void {
  expect(text.length).toBeLessThan(max)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/)
}

describe("ids, tool names and owners are shown clipped and inert", () => {
  it("transitions list: each row on one short line, with the length said", () => {
    const r = run(["transitions", "list", "--file", file])
    expect(r.code, r.err).toBe(0)
    shownBounded(r.out)
    const lines = r.out.trim().split("\n")
    expect(lines).toHaveLength(3)
    const huge = lines.find((l) => l.startsWith("pay"))
    expect(huge).toMatch(
      new RegExp(
        `^pay\\\\x1b\\[2J\\\\x1b\\]0;PWNED\\\\x07x+\\.\\.\\. \\(${HUGE.length} characters, sha256 ${sha(HUGE)}\\) {2}pay_t+\\.\\.\\. \\(${TOOL.length} characters, sha256 ${sha(TOOL)}\\)`,
      ),
    )
  })

  it("transitions list --stuck: the next steps name a long id as $ID and say where to take it from", () => {
    const r = run(["transitions", "list", "--stuck", "--file", file])
    expect(r.code, r.err).toBe(0)
    shownBounded(r.out, 6000)
    const next = r.out.split("\n").filter((l) => l.includes("next:"))
    expect(next).toHaveLength(3)
    for (const l of next) {
      // The exact id comes from --json, told apart from another cut alike by its digest.
      const id = [HUGE, LONG, SETTLE].find((i) => l.includes(`the one whose sha256 starts ${sha(i)}`))
      expect(id).toBeDefined()
      expect(l).toContain(
        `its id is ${id?.length} characters, too long to print: set ID to it (its request_id in mycelium ` +
          `transitions list --stuck --json --file ${file}, the one whose sha256 starts ${sha(id ?? "")})`,
      )
      expect(l).toContain('mycelium transitions release "$ID" --fence 1')
      expect(l).toContain(`--file ${file}`)
    }
    // The IN_FLIGHT ones' workers may be alive: their death is confirmed first, by the same "$ID".
    expect(next.filter((l) => l.includes('mycelium transitions mark-dead "$ID" --fence 1'))).toHaveLength(2)
  })

  it("transitions list --json still prints every id whole", () => {
    const r = run(["transitions", "list", "--json", "--file", file])
    expect(r.code, r.err).toBe(0)
    const ids = (JSON.parse(r.out) as { request_id: string }[]).map((e) => e.request_id).sort()
    expect(ids).toEqual([LONG, SETTLE, HUGE].sort())
  })

  it("transitions show, and a refused release of a live lease: short lines, the next step with $ID", () => {
    const show = run(["transitions", "show", LONG, "--file", file])
    expect(show.code, show.err).toBe(0)
    shownBounded(show.out)
    expect(show.out).toContain(
      `request_id: refund-${"y".repeat(293)}... (100007 characters, sha256 ${sha(LONG)})`,
    )
    const refused = run([
      "transitions",
      "release",
      LONG,
      "--verified",
      "not-executed",
      "--by",
      "ops",
      "--reason",
      "r",
      "--file",
      file,
    ])
    expect(refused.code).toBe(1)
    shownBounded(refused.err, 3000)
    // The ledger's own text quotes the id clipped (300 characters), so no cut of the message is needed.
    expect(refused.err).toMatch(/request 'refund-y{293}\.\.\.'/)
    expect(refused.err).toContain('mycelium transitions mark-dead "$ID"')
    expect(refused.err).toContain("set ID to it (the one you passed)")
  })

  it("a short id whose shell word is long (bidi controls) is $ID too: the bounded refusal cut that word", async () => {
    // 294 characters, each U+202E a 12-character `\xe2\x80\xae` in a `$'..'` word: a 3,500-character hint, which
    // the 2,000-character message kept only the two ends of. Pasted, the cut word named another id.
    const bidi = `pay-${"\u202e".repeat(290)}`
    const own = join(cwd, "bidi.json")
    const now = Date.now() / 1000
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: bidi, tool: "pay", owner: "w4", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    const flags = ["--verified", "not-executed", "--by", "ops", "--reason", "r", "--file", own]
    const refused = run(["transitions", "release", bidi, ...flags])
    expect(refused.code).toBe(1)
    expect(refused.err).not.toContain("mark-dead $'")
    expect(refused.err).toContain(
      'mark-dead "$ID" --by you --reason "how you know it is dead" --file ' +
        `${own} [--override-heartbeat] (its id is 294 characters, too long to print: set ID to it (the one you passed))`,
    )
    const stuck = run(["transitions", "list", "--stuck", "--file", own])
    expect(stuck.code, stuck.err).toBe(0)
    expect(stuck.out).not.toContain("$'pay-")
    expect(stuck.out).toContain('mycelium transitions mark-dead "$ID" --fence 1')
  })

  it("no such transition: the id typed is clipped in the message", () => {
    const r = run(["transitions", "show", `nope\u001b[2J${"n".repeat(100_000)}`, "--file", file])
    expect(r.code).toBe(1)
    shownBounded(r.err, 1000)
    expect(r.err).toMatch(
      /no transition 'nope\\x1b\[2Jn+\.\.\. \(100008 characters, sha256 [0-9a-f]{32}\)' in file /,
    )
  })

  it("mark-dead and release print the id and tool clipped", async () => {
    // A copy of SETTLE's row in a file of its own: the other tests read the shared file's rows as beforeAll left them.
    const own = join(cwd, "settle.json")
    await row(SETTLE, "refund", "w3", false, own)
    const by = ["--by", `ops${"o".repeat(5000)}`, "--reason", "worker killed", "--file", own]
    const dead = run(["transitions", "mark-dead", SETTLE, ...by, "--override-heartbeat"])
    expect(dead.code, dead.err.slice(-600)).toBe(0)
    shownBounded(dead.out)
    expect(dead.out).toContain('mycelium transitions release "$ID" --fence 1')
    const released = run(["transitions", "release", SETTLE, "--verified", "not-executed", ...by])
    expect(released.code, released.err).toBe(0)
    shownBounded(released.out)
    expect(released.out).toMatch(
      new RegExp(
        `^released settle-s+\\.\\.\\. \\(100007 characters, sha256 ${sha(SETTLE)}\\) \\(refund\\): ` +
          `verified=not_executed by=opso+\\.\\.\\. \\(5003 characters, sha256 [0-9a-f]{32}\\)`,
      ),
    )
  })

  it("tasks list clips the task's id and name", () => {
    const list = run(["tasks", "list", "--file", tasks])
    expect(list.code, list.err).toBe(0)
    shownBounded(list.out)
    expect(list.out).toMatch(
      /^import:z+\.\.\. \(1048583 characters, sha256 [0-9a-f]{32}\) {2}tk+\.\.\. \(5001 characters, sha256 [0-9a-f]{32}\) {2}completed$/m,
    )
  })
})

describe("two long ids never print alike, and a pasted display names no other row", () => {
  // Alike in their first 300 characters and their length, both fence 1: the list and its next steps printed them
  // the same, so `--fence` did not catch releasing the other one `--verified not-executed`, which paid again.
  const TWIN = `pay-${"q".repeat(400)}`
  const twins = [`${TWIN}-a`, `${TWIN}-b`, `${TWIN}\ud800`, `${TWIN}\udc00`, `${TWIN}\ufffd`]

  it("transitions list and its next steps tell ids cut alike apart by their digest; --json is whole", async () => {
    const own = join(cwd, "twins.json")
    for (const id of twins) {
      const now = Date.now() / 1000
      await new FileLedgerStorage(own).set(
        newEntry({ requestId: id, tool: "pay", owner: "w5", fence: 1, leaseUntil: now - 10 }, now - 50),
      )
    }
    const list = run(["transitions", "list", "--stuck", "--file", own])
    expect(list.code, list.err).toBe(0)
    const rows = list.out.split("\n").filter((l) => l.startsWith("pay-"))
    const next = list.out.split("\n").filter((l) => l.includes("next:"))
    expect(rows).toHaveLength(5)
    expect(next).toHaveLength(5)
    // Five different lines, five different next steps: a lone surrogate hashes apart from the U+FFFD UTF-8 makes of it.
    expect(new Set(rows.map((l) => l.split("  ")[0])).size).toBe(5)
    expect(new Set(next).size).toBe(5)
    for (const id of twins.slice(0, 2)) {
      const line = `${TWIN.slice(0, 300)}... (406 characters, sha256 ${sha(id)})  pay  EXPIRED  age=`
      expect(rows.filter((l) => l.startsWith(line))).toHaveLength(1)
      expect(next.filter((l) => l.includes(`the one whose sha256 starts ${sha(id)}`))).toHaveLength(1)
    }
    const json = run(["transitions", "list", "--stuck", "--json", "--file", own])
    expect((JSON.parse(json.out) as { request_id: string }[]).map((e) => e.request_id).sort()).toEqual(
      [...twins].sort(),
    )
  })

  it("an id pasted from a listing's display is refused when it is another row's display, even if a row has it", async () => {
    const own = join(cwd, "pasted.json")
    const now = Date.now() / 1000
    const real = `${TWIN}-real`
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: real, tool: "pay", owner: "w6", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    const display = run(["transitions", "list", "--file", own]).out.split("  ")[0] as string
    expect(display).toBe(`${TWIN.slice(0, 300)}... (409 characters, sha256 ${sha(real)})`)
    // A row whose id is literally that display: the release an operator pasted would settle it instead.
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: display, tool: "pay", owner: "w7", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    const flags = ["--fence", "1", "--by", "ops", "--reason", "r", "--file", own]
    const refusal =
      `is how the CLI prints the id of another transition (409 characters, sha256 ${sha(real)}), not an id: set ` +
      `ID to its request_id in mycelium transitions list --json --file ${own} and pass "$ID"`
    for (const args of [
      [
        "transitions",
        "release",
        display,
        "--verified",
        "not-executed",
        "--override-death-signal",
        "gone",
        ...flags,
      ],
      ["transitions", "mark-dead", display, "--override-heartbeat", ...flags],
      ["transitions", "show", display, "--file", own],
    ]) {
      const r = run(args)
      expect(r.code, r.out).toBe(1)
      expect(r.err).toContain(refusal)
    }
    const after = JSON.parse(run(["transitions", "list", "--json", "--file", own]).out) as {
      request_id: string
      operator_resolution: string | null
      worker_dead_asserted_at: number | null
    }[]
    expect(after).toHaveLength(2)
    for (const e of after) {
      expect(e.operator_resolution).toBeNull()
      expect(e.worker_dead_asserted_at).toBeNull()
    }
    // The whole id, from --json, releases the row it names.
    const whole = run([
      "transitions",
      "release",
      real,
      "--verified",
      "not-executed",
      "--override-death-signal",
      "gone",
      ...flags,
    ])
    expect(whole.code, whole.err).toBe(0)
    expect(whole.out).toContain(`released ${display} (pay): verified=not_executed`)
  })

  it("a pasted display is refused when the id it shows has a lone surrogate, which prints as U+FFFD", async () => {
    const own = join(cwd, "pasted-surrogate.json")
    const now = Date.now() / 1000
    const real = `pay-\ud800${"q".repeat(400)}`
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: real, tool: "pay", owner: "w6", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    // What the terminal got: stdout is UTF-8, so the lone surrogate reached it, and the paste, as U+FFFD.
    const display = run(["transitions", "list", "--file", own]).out.split("  ")[0] as string
    expect(display).toMatch(/^pay-\ufffdq{295}\.{3} \(405 characters, sha256 [0-9a-f]{32}\)$/)
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: display, tool: "pay", owner: "w7", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    const r = run([
      "transitions",
      "release",
      display,
      "--verified",
      "not-executed",
      "--override-death-signal",
      "gone",
      "--by",
      "ops",
      "--reason",
      "r",
      "--file",
      own,
    ])
    expect(r.code, r.out).toBe(1)
    expect(r.err).toContain(`is how the CLI prints the id of another transition (405 characters, sha256 `)
    const after = JSON.parse(run(["transitions", "list", "--json", "--file", own]).out) as {
      operator_resolution: string | null
    }[]
    expect(after.map((e) => e.operator_resolution)).toEqual([null, null])
  })

  it("a display-shaped id no other row prints as is an id like any other", async () => {
    const own = join(cwd, "literal.json")
    const now = Date.now() / 1000
    const literal = `${"L".repeat(300)}... (1000 characters, sha256 ${"0".repeat(32)})`
    await new FileLedgerStorage(own).set(
      newEntry({ requestId: literal, tool: "pay", owner: "w8", fence: 1, leaseUntil: now - 10 }, now - 50),
    )
    const flags = [
      "--verified",
      "not-executed",
      "--override-death-signal",
      "gone",
      "--by",
      "ops",
      "--reason",
      "r",
    ]
    const r = run(["transitions", "release", literal, ...flags, "--file", own])
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain(
      `(${literal.length} characters, sha256 ${sha(literal)}) (pay): verified=not_executed`,
    )
  })

  it("tasks: a pasted display of another task's id is refused; the list tells twins apart", async () => {
    const own = join(cwd, "twin-tasks.json")
    const ledger = new TaskLedger({ storage: new FileTaskStore(own), onWarning: () => {} })
    for (const id of twins.slice(0, 2)) await ledger.task("t", async () => "ok")({}, { taskId: id })
    const list = run(["tasks", "list", "--file", own])
    expect(list.code, list.err).toBe(0)
    const lines = list.out.trim().split("\n")
    expect(lines.sort()).toEqual(
      twins
        .slice(0, 2)
        .map((id) => `${TWIN.slice(0, 300)}... (406 characters, sha256 ${sha(id)})  t  completed`)
        .sort(),
    )
    const display = (lines[0] as string).split("  ")[0] as string
    const release = ["--verified", "not-executed", "--by", "ops", "--reason", "r"]
    for (const args of [["show"], ["release", ...release]]) {
      const r = run(["tasks", args[0] as string, display, ...args.slice(1), "--file", own])
      expect(r.code, r.out).toBe(1)
      expect(r.err).toMatch(
        /is how the CLI prints the id of another task \(406 characters, sha256 [0-9a-f]{32}\)/,
      )
      expect(r.err).toContain("mycelium tasks list --json")
    }
  })
})
