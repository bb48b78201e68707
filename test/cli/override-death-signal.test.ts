// From the CLI, a not-executed release of a lapsed lease whose owner may still be alive is refused (exit 1) until
// the operator names why the owner can no longer act; a blank reason is a usage error (exit 2), never a stack.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-override-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

describe("mycelium transitions release --override-death-signal", () => {
  it("refuses without a death signal, rejects a blank override, releases with a named one", async () => {
    const file = join(cwd, "ledger.json")
    const storage = new FileLedgerStorage(file)
    const now = Date.now() / 1000
    // Lapsed a second ago, heartbeat 11 s ago: far inside the default presumedDeadAfter.
    await storage.set(
      newEntry(
        {
          requestId: "pay:1",
          tool: "pay",
          owner: "w1",
          fence: 1,
          leaseUntil: now - 1,
          lastHeartbeatAt: now - 11,
        },
        now - 11,
      ),
    )
    const base = ["transitions", "release", "pay:1", "--file", file, "--verified", "not-executed"]
    const who = ["--by", "ops", "--reason", "no charge at the provider"]

    const refused = run([...base, ...who])
    expect(refused.code, refused.err).toBe(1)
    expect(refused.err).toMatch(
      /^mycelium: refused: .*mycelium transitions mark-dead .*--override-death-signal WHY/,
    )
    expect(refused.err).not.toMatch(/\n\s+at /)

    const blank = run([...base, ...who, "--override-death-signal", " "])
    expect(blank.code, blank.err).toBe(2)
    expect(blank.err).toContain("--override-death-signal must say why")

    const ok = run([
      "release",
      "pay:1",
      "--file",
      file,
      "--verified",
      "not-executed",
      ...who,
      "--override-death-signal",
      "node w1 deleted",
    ])
    expect(ok.code, ok.err).toBe(0)
    const row = await new FileLedgerStorage(file).get("pay:1")
    expect(row).toMatchObject({
      terminalOutcome: "BLOCKED",
      operatorResolution: "not_executed",
      releasedFromOutcome: "EXPIRED",
      resolutionReason: "no charge at the provider (death signal overridden: node w1 deleted)",
    })
  })

  it("--fence: refused (exit 1) when another attempt claimed the call since, a usage error (2) when not a number", async () => {
    const file = join(cwd, "fence.json")
    const storage = new FileLedgerStorage(file)
    const now = Date.now() / 1000
    await storage.set(
      newEntry({ requestId: "pay:2", tool: "pay", owner: "w2", fence: 2, leaseUntil: now - 1 }, now - 5),
    )
    const shown = run(["transitions", "show", "pay:2", "--file", file])
    expect(shown.out).toContain("fence: 2")
    const base = [
      "transitions",
      "mark-dead",
      "pay:2",
      "--file",
      file,
      "--by",
      "ops",
      "--reason",
      "node drained",
    ]
    const stale = run([...base, "--override-heartbeat", "--fence", "1"])
    expect(stale.code, stale.err).toBe(1)
    expect(stale.err).toMatch(/^mycelium: refused: .*at fence 2, not 1/)
    expect((await storage.get("pay:2"))?.workerDeadAssertedBy).toBeNull()
    const bad = run([...base, "--override-heartbeat", "--fence", "two"])
    expect(bad.code, bad.err).toBe(2)
    expect(bad.err).toContain("--fence must be a whole number")
    const ok = run([...base, "--override-heartbeat", "--fence", "2"])
    expect(ok.code, ok.err).toBe(0)
    const release = ["transitions", "release", "pay:2", "--file", file, "--verified", "not-executed"]
    const staleRelease = run([...release, "--by", "ops", "--reason", "no charge", "--fence", "1"])
    expect(staleRelease.code, staleRelease.err).toBe(1)
    const released = run([...release, "--by", "ops", "--reason", "no charge", "--fence", "2"])
    expect(released.code, released.err).toBe(0)
    // A release moves the fence (one-shot: a second release with the same --fence is refused).
    expect(await storage.get("pay:2")).toMatchObject({ operatorResolution: "not_executed", fence: 3 })
  })
})

// Text of invisible characters only (a zero-width space, a word joiner) passed the blank checks, which String.trim()
// keeps them through: a lapsed lease was released as not executed on an override that says nothing, recorded as by
// an operator no one can read. Each is a usage error (exit 2), the row untouched.
describe("invisible-only operator text is refused like blank text", () => {
  const ZW = "\u200b"
  it.each([
    [
      "--override-death-signal",
      ["--by", "ops", "--reason", "provider shows nothing", "--override-death-signal", ZW],
    ],
    [
      "--by",
      ["--by", `${ZW}\ufeff`, "--reason", "provider shows nothing", "--override-death-signal", "host wiped"],
    ],
    ["--reason", ["--by", "ops", "--reason", `${ZW}\u2060`, "--override-death-signal", "host wiped"]],
  ])("%s", async (flag, args) => {
    const file = join(cwd, `invisible${flag}.json`)
    const storage = new FileLedgerStorage(file)
    const now = Date.now() / 1000
    // A lapsed lease, no heartbeat silence, no mark-dead: its worker may still charge.
    await storage.set({
      ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 1 }, now - 5),
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
    })
    const r = run(["transitions", "release", "pay:1", "--file", file, "--verified", "not-executed", ...args])
    expect([r.code, r.err], r.out).toEqual([2, expect.stringContaining(flag)])
    expect((await storage.get("pay:1"))?.operatorResolution ?? null).toBeNull()
  })
})
