// Found by an audit: a request id starting with '-' (a `requestIdFrom` argument can be anything) was printed in the
// next steps as an argument (`mark-dead -x --fence 1 ...`), which parseArgs reads as a flag, so the pasted hint was a
// usage error. Such an id is now printed last, after `--`, in every hint; each is pasted here as printed.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { clip } from "../../src/cli/style.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-dash-ids-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)
const now = () => Date.now() / 1000
const word = (v: string): string => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replaceAll("'", `'\\''`)}'`)

/** Runs a printed command line through bash, `mycelium` being this checkout's CLI. */
function paste(command: string, env: Record<string, string> = {}) {
  const [node, pre] = cliCommand()
  const cli = [node, ...pre].map(word).join(" ")
  const r = spawnSync("bash", ["-c", command.replace(/^mycelium /, `${cli} `)], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...env },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** A printed command, its placeholders filled in as an operator would. */
const filled = (command: string): string =>
  command
    .replace("[--override-heartbeat]", "--override-heartbeat")
    .replace('"how you know it is dead"', '"pod deleted"')
    .replace("completed|not-executed", "not-executed")
    .replace("--reason ...", '--reason "no charge"')

/** A row whose worker may be alive: its lease lapsed a minute ago, and nobody asserted its death. */
async function lapsed(file: string, id: string): Promise<void> {
  await new FileLedgerStorage(file).set({
    ...newEntry({ requestId: id, tool: "pay", owner: "w1", fence: 1, leaseUntil: now() - 60 }, now() - 120),
    sideEffectBoundary: "maybe_crossed",
  })
}

const operatorResolution = async (file: string, id: string) =>
  (await new FileLedgerStorage(file).get(id))?.operatorResolution

// "-h" and "--help" too: the dispatcher printed the help for them, even after `--`.
for (const id of ["-x", "--fence", "-h", "--help", `-${"y".repeat(400)}`])
  describe(`request id ${id.slice(0, 12)}`, () => {
    const long = id.length > 300
    const env = long ? { ID: id } : undefined

    it("transitions list --stuck: its mark-dead, then its release, pasted as printed, settle the row", async () => {
      const file = join(cwd, `stuck${id.length}${id.slice(0, 3)}.json`)
      await lapsed(file, id)
      const hint = () => {
        const r = run(["transitions", "list", "--stuck", "--file", file])
        expect(r.code, r.err).toBe(0)
        return /next: (.*)$/m.exec(r.out)?.[1] ?? ""
      }
      const markDead = /mycelium transitions mark-dead .*?(?=; then )/.exec(hint())?.[0] ?? ""
      expect(markDead).toContain(long ? ' -- "$ID"' : ` -- ${word(id)}`)
      // Its worker may be alive (a heartbeat 2 minutes ago): refused, and the flag that helps goes before the --.
      const alive = paste(markDead.replace(" [--override-heartbeat]", ""), env)
      expect(alive.code, alive.err).toBe(1)
      expect(alive.err).toContain("(CLI: add --override-heartbeat before the --)")
      const dead = paste(filled(markDead), env)
      expect(dead.code, dead.err + dead.out).toBe(0)
      expect((await new FileLedgerStorage(file).get(id))?.workerDeadAssertedBy).toBe("you")
      const release = /mycelium transitions release .*$/.exec(hint())?.[0] ?? ""
      const done = paste(filled(release), env)
      expect(done.code, done.err + done.out).toBe(0)
      expect(await operatorResolution(file, id)).toBe("not_executed")
    })

    it("a refused release's mark-dead, then mark-dead's release, pasted as printed, settle the row", async () => {
      const file = join(cwd, `refused${id.length}${id.slice(0, 3)}.json`)
      await lapsed(file, id)
      const who = ["--verified", "not-executed", "--by", "ops", "--reason", "no charge", "--file", file]
      const refused = run(["release", ...who, "--", id])
      expect(refused.code, refused.err).toBe(1)
      const markDead =
        /mycelium transitions mark-dead .*?(?=( \(its id|, or add))/.exec(refused.err)?.[0] ?? ""
      expect(markDead, refused.err).toContain(" -- ")
      expect(refused.err).toContain("or add --override-death-signal WHY before the --;")
      const dead = paste(filled(markDead), env)
      expect(dead.code, dead.err + dead.out).toBe(0)
      const release = /mycelium transitions release .*?(?=( \(its id|$))/m.exec(dead.out)?.[0] ?? ""
      expect(release, dead.out).toContain(" -- ")
      const done = paste(filled(release), env)
      expect(done.code, done.err + done.out).toBe(0)
      expect(await operatorResolution(file, id)).toBe("not_executed")
    })
  })

describe("a pasted display of another row's id that starts with '-'", () => {
  const id = `-${"z".repeat(400)}`
  const display = clip(id)

  it("transitions: the refusal says to pass $ID after --, and that command settles the row", async () => {
    const file = join(cwd, "display.json")
    await lapsed(file, id)
    await new FileLedgerStorage(file).set({
      ...(await new FileLedgerStorage(file).get(id))!,
      workerDeadAssertedAt: now(),
      workerDeadAssertedBy: "ops",
    })
    const who = ["--verified", "not-executed", "--by", "ops", "--reason", "r", "--file", file]
    const r = run(["transitions", "release", ...who, "--", display])
    expect(r.code).toBe(1)
    expect(r.err).toContain('and pass "$ID" last, after --')
    const done = run(["transitions", "release", ...who, "--", id])
    expect(done.code, done.err).toBe(0)
  })

  it("tasks: the refusal says to pass $ID after --, and that command shows the task", async () => {
    const file = join(cwd, "display-tasks.json")
    await new TaskLedger({ storage: new FileTaskStore(file), onWarning: () => {} }).task(
      "t",
      async () => "ok",
    )({}, { taskId: id })
    const r = run(["tasks", "show", "--file", file, "--", display])
    expect(r.code).toBe(1)
    expect(r.err).toContain('and pass "$ID" last, after --')
    const shown = run(["tasks", "show", "--file", file, "--json", "--", id])
    expect(shown.code, shown.err).toBe(0)
    expect(JSON.parse(shown.out).request_id).toBe(id)
  })
})
