// The `next:` steps `transitions list --stuck` prints, followed as printed: death before the provider read, on the
// store the listing used (never the environment's), and a way to settle a killed worker's unbounded lease. The
// refusals on the way speak the command line's flags.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { shellQuote as shellQuote0, storeFlagsText } from "../../src/cli/ledger-access.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-hints-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
const now = () => Date.now() / 1000
/** One shell word, as a POSIX shell reads it back. */
const shellQuote = (v: string): string => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replaceAll("'", `'\\''`)}'`)

/** The `next:` line printed for `id`, its placeholders filled in. */
function hintFor(out: string, id: string): string {
  const lines = out.split("\n")
  const at = lines.findIndex((l) => l.startsWith(`${id} `))
  expect(at, out).toBeGreaterThanOrEqual(0)
  return (lines[at + 1] ?? "").trim()
}

/** Runs a printed command line through a shell, `mycelium` being this checkout's CLI. */
function paste(command: string, env: Record<string, string> = {}) {
  const [node, pre] = cliCommand()
  const cli = [node, ...pre].map(shellQuote).join(" ")
  const r = spawnSync("bash", ["-c", command.replace(/^mycelium /, `${cli} `)], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...env },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

describe("transitions list --stuck: next steps", () => {
  it("a BLOCKED row whose lease lapsed: confirm the death first (mark-dead, its override shown), then read the provider", async () => {
    const file = join(cwd, "blocked.json")
    const t = now()
    await new FileLedgerStorage(file).set({
      ...newEntry({ requestId: "pay-s", tool: "pay", owner: "w1", fence: 1, lastHeartbeatAt: t - 4 }, t - 5),
      terminalOutcome: "BLOCKED",
      status: "failed",
      error: "stale in-flight lease; side-effect boundary maybe_crossed — effect may have happened",
      sideEffectBoundary: "maybe_crossed",
    })
    const list = run(["transitions", "list", "--stuck", "--file", file])
    expect(list.code, list.err).toBe(0)
    const hint = hintFor(list.out, "pay-s")
    expect(hint).toMatch(
      /^next: first confirm the worker is dead: mycelium transitions mark-dead pay-s --fence 1 --by you --reason "how you know it is dead" --file \S+ \[--override-heartbeat\]; then verify with the provider, then: mycelium transitions release pay-s --fence 1 /,
    )
    // Once its death is asserted, the provider read is the next step.
    const dead = run([
      "transitions",
      "mark-dead",
      "pay-s",
      "--file",
      file,
      "--by",
      "ops",
      "--reason",
      "pod gone",
    ])
    expect(dead.code).toBe(1)
    expect(dead.err).toContain("(CLI: add --override-heartbeat)")
    const forced = [...["transitions", "mark-dead", "pay-s", "--file", file], "--override-heartbeat"]
    expect(run([...forced, "--by", "ops", "--reason", "pod gone"]).code).toBe(0)
    expect(hintFor(run(["transitions", "list", "--stuck", "--file", file]).out, "pay-s")).toMatch(
      /^next: verify with the provider, then: mycelium transitions release pay-s /,
    )
  })

  it("carry the store flags: the pasted hint settles the listed store, not the one the environment names", async () => {
    const dir = mkdtempSync(join(cwd, "it's staging "))
    const staging = join(dir, "staging.json")
    const prod = join(cwd, "prod.json")
    for (const f of [staging, prod])
      await new FileLedgerStorage(f).set({
        ...newEntry({ requestId: "send_payment:order-42", tool: "pay", owner: "w1", fence: 1 }, now() - 5),
        terminalOutcome: "UNKNOWN",
        status: "failed",
        sideEffectBoundary: "maybe_crossed",
        externalOperationRef: "pi_1",
      })
    const env = { MYCELIUM_LEDGER_FILE: prod }
    const list = run(["transitions", "list", "--stuck", "--file", staging], env)
    expect(list.code, list.err).toBe(0)
    const hint = hintFor(list.out, "send_payment:order-42")
    expect(hint).toContain(`--file ${shellQuote(staging)}`)
    const command = hint
      .replace(/^next: .*?then: /, "")
      .replace("completed|not-executed", "not-executed")
      .replace("--reason ...", '--reason "no charge in staging"')
    const done = paste(command, env)
    expect(done.code, done.err).toBe(0)
    expect((await new FileLedgerStorage(staging).get("send_payment:order-42"))?.operatorResolution).toBe(
      "not_executed",
    )
    expect((await new FileLedgerStorage(prod).get("send_payment:order-42"))?.operatorResolution).toBeNull()
  })

  it("an IN_FLIGHT row on an unbounded lease: mark-dead, then release --force; never without either", async () => {
    const file = join(cwd, "unbounded.json")
    await new FileLedgerStorage(file).set({
      ...newEntry({ requestId: "pay-u", tool: "pay", owner: "w1", fence: 1, leaseUntil: null }, now() - 7200),
      sideEffectBoundary: "maybe_crossed",
    })
    const hint = hintFor(run(["transitions", "list", "--stuck", "--file", file]).out, "pay-u")
    expect(hint).toMatch(/^next: first confirm the worker is dead: mycelium transitions mark-dead pay-u /)
    expect(hint).toMatch(/then: mycelium transitions release pay-u .* --force --file /)
    // Its silence never counts as death: the override is required, not optional.
    expect(hint).toMatch(/mark-dead pay-u .* --override-heartbeat; then /)
    const release = ["transitions", "release", "pay-u", "--file", file, "--verified", "not-executed"]
    const who = ["--by", "ops", "--reason", "no charge"]
    expect(run([...release, ...who, "--force"]).code).toBe(1)
    const marked = run([
      ...["transitions", "mark-dead", "pay-u", "--file", file, "--override-heartbeat"],
      ...["--by", "ops", "--reason", "pod deleted"],
    ])
    expect(marked.code, marked.err).toBe(0)
    expect(marked.out).toMatch(/next: verify with the provider, then: .* --force --file /)
    const noForce = run([...release, ...who])
    expect(noForce.code).toBe(1)
    expect(noForce.err).toContain("release with force")
    const ok = run([...release, ...who, "--force"])
    expect(ok.code, ok.err).toBe(0)
    expect(await new FileLedgerStorage(file).get("pay-u")).toMatchObject({
      operatorResolution: "not_executed",
      releasedFromOutcome: "IN_FLIGHT",
      terminalOutcome: "BLOCKED",
    })
  })
})

describe("a request id holding control characters", () => {
  it("is printed as a bash $'..' word with no raw control character, which names the row when pasted", async () => {
    const file = join(cwd, "controls.json")
    const id = "pay\t1\\'x\u007f\u0085\u001b[2J"
    await new FileLedgerStorage(file).set({
      ...newEntry({ requestId: id, tool: "pay", owner: "w1", fence: 1, leaseUntil: null }, now() - 7200),
      sideEffectBoundary: "maybe_crossed",
    })
    const list = run(["transitions", "list", "--stuck", "--file", file])
    expect(list.code, list.err).toBe(0)
    const hint = list.out.split("\n").find((l) => l.includes("next:")) ?? ""
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the hint must hold none
    expect(hint).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/)
    const markDead = /mycelium transitions mark-dead .*?--override-heartbeat/.exec(hint)?.[0] ?? ""
    expect(markDead).toContain("mark-dead $'pay\\x091\\\\\\'x\\x7f\\xc2\\x85\\x1b[2J' ")
    const done = paste(markDead.replace('"how you know it is dead"', '"pod deleted"'))
    expect(done.code, done.err).toBe(0)
    expect((await new FileLedgerStorage(file).get(id))?.workerDeadAssertedBy).toBe("you")
  })
})

describe("a request id holding NUL", () => {
  it("gets no command (argv cannot carry it: a pasted one would act on its prefix, another row)", async () => {
    const file = join(cwd, "nul.json")
    for (const id of ["pay:A1", "pay:A1\u0000x"])
      await new FileLedgerStorage(file).set({
        ...newEntry(
          { requestId: id, tool: "pay", owner: "w1", fence: 1, leaseUntil: now() - 60 },
          now() - 120,
        ),
        sideEffectBoundary: "maybe_crossed",
      })
    const list = run(["transitions", "list", "--stuck", "--file", file])
    expect(list.code, list.err).toBe(0)
    const hints = list.out.split("\n").filter((l) => l.includes("next:"))
    expect(
      hints.filter((h) => h.includes("holds a NUL character, which no command line can pass")),
    ).toHaveLength(1)
    // The one command left names the plain row, and only once.
    expect(hints.filter((h) => h.includes("mark-dead "))).toEqual([
      expect.stringContaining("mark-dead pay:A1 "),
    ])
    expect(shellQuote0("pay:A1\u0000x")).toBeNull()
    expect(() => storeFlagsText({ file: "/tmp/a\u0000b" })).toThrow(/NUL/)
  })
})

describe("a --file path holding a control character", () => {
  it("is printed as the same $'..' word as an id, and the pasted hint settles that file", async () => {
    const dir = mkdtempSync(join(cwd, "tab\tdir "))
    const file = join(dir, "ledger.json")
    await new FileLedgerStorage(file).set({
      ...newEntry({ requestId: "pay-t", tool: "pay", owner: "w1", fence: 1 }, now() - 5),
      terminalOutcome: "UNKNOWN",
      status: "failed",
      sideEffectBoundary: "maybe_crossed",
    })
    const list = run(["transitions", "list", "--stuck", "--file", file])
    expect(list.code, list.err).toBe(0)
    const hint = hintFor(list.out, "pay-t")
    expect(hint).toContain(`--file $'${dir.replace("\t", "\\x09")}/ledger.json'`)
    const command = hint
      .replace(/^next: .*?then: /, "")
      .replace("completed|not-executed", "not-executed")
      .replace("--reason ...", '--reason "no charge"')
    const done = paste(command)
    expect(done.code, done.err).toBe(0)
    expect((await new FileLedgerStorage(file).get("pay-t"))?.operatorResolution).toBe("not_executed")
  })
})

describe("a refused release names the command line's own steps", () => {
  it("mark-dead and --override-death-signal, with the store flags; never the in-process names", async () => {
    const file = join(cwd, "alive.json")
    const t = now()
    await new FileLedgerStorage(file).set(
      newEntry(
        { requestId: "pay-m", tool: "pay", owner: "w1", fence: 1, leaseUntil: t - 1, lastHeartbeatAt: t - 3 },
        t - 3,
      ),
    )
    const r = run([
      ...["transitions", "release", "pay-m", "--file", file, "--fence", "1"],
      ...["--verified", "not-executed", "--by", "ops", "--reason", "no charge"],
    ])
    expect(r.code).toBe(1)
    expect(r.err).toContain(
      `mycelium transitions mark-dead pay-m --fence 1 --by you --reason "how you know it is dead" --file ${file} [--override-heartbeat], or add --override-death-signal WHY; read the provider after that, not before`,
    )
    expect(r.err).not.toMatch(/markWorkerDeadFor|overrideDeathSignal|overrideHeartbeat/)
  })
})

describe("storeFlagsText", () => {
  it("keeps every store flag verbatim, shell-quoted, and hides only a password", () => {
    expect(storeFlagsText({ file: "/tmp/a b/l.json", prefix: "", table: "t", config: "-odd.yaml" })).toEqual({
      text: " --config=-odd.yaml --file '/tmp/a b/l.json' --table t --prefix ''",
      hidden: false,
    })
    expect(storeFlagsText({ "redis-url": "redis://127.0.0.1:6379", prefix: "p:" }).text).toBe(
      " --redis-url redis://127.0.0.1:6379 --prefix p:",
    )
    for (const secret of [
      "redis://:s3cret@cache:6379",
      "rediss://user:s3cret@cache:6380/0",
      "postgres://app:s3cret@db/ledger",
      "postgres://db/ledger?password=s3cret",
      "host=db user=app password=s3cret dbname=ledger",
    ]) {
      const key = secret.startsWith("redis") ? "redis-url" : "postgres-dsn"
      const { text, hidden } = storeFlagsText({ [key]: secret })
      expect(hidden, secret).toBe(true)
      expect(text, secret).not.toContain("s3cret")
      expect(text, secret).toContain("***")
    }
    expect(storeFlagsText({ "postgres-dsn": "postgres://app@db/ledger" })).toEqual({
      text: " --postgres-dsn postgres://app@db/ledger",
      hidden: false,
    })
  })
})
