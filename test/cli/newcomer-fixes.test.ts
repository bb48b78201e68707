// What a newcomer met: `npm start` that rewrote the files another demo served (or ran the whole demo before saying hono
// was missing), two demos at once that called each other's receipts forged, init -o hints for another file, Node's
// parseArgs messages printed as `\x0a`, and a curl hint sending a variable nobody set.
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { once } from "node:events"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { childBundles } from "../child-bundle.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner, withoutPackage } from "./run-cli.ts"

const bundled = childBundles()

const cwd = mkdtempSync(join(tmpdir(), "mycelium-newcomer-"))
const run = cliRunner(cwd)

const children: ChildProcess[] = []
afterAll(async () => {
  for (const c of children) c.kill("SIGTERM")
  // The commands write in cwd until they exit.
  await Promise.all(children.map((c) => c.exitCode ?? c.signalCode ?? once(c, "exit")))
  rmSync(cwd, { recursive: true, force: true })
})

/** Starts a long-running command; resolves with its output once `until` matches it. */
function startUntil(args: string[], until: RegExp, env: Record<string, string> = {}) {
  const [cmd, pre] = cliCommand()
  const child = spawn(cmd, [...pre, ...args], { cwd, env: { ...process.env, NO_COLOR: "1", ...env } })
  children.push(child)
  let out = ""
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${until} after 30 s:\n${out}`)), 30_000)
    const on = (d: unknown) => {
      out += String(d)
      if (until.test(out)) {
        clearTimeout(timer)
        resolve(out)
      }
    }
    child.stdout.on("data", on)
    child.stderr.on("data", on)
    child.once("exit", (code) => reject(new Error(`exited ${code}:\n${out}`)))
  })
  return { child, ready }
}

const snapshot = (dir: string) =>
  ["l.json", "demo-receipts.jsonl"].map((f) => readFileSync(join(dir, f), "utf8"))

describe("demo --serve checks the packages and the port before the demo writes anything", () => {
  it("a taken port: exit 1 with the port line, the previous demo's files untouched, no demo output", async () => {
    const dir = join(cwd, "taken")
    expect(run(["demo", "--ledger", join(dir, "l.json")]).code).toBe(0)
    const before = snapshot(dir)
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const r = run(["demo", "--serve", "--port", String(port), "--ledger", join(dir, "l.json")])
      expect(r.code, r.err).toBe(1)
      expect(r.err).toMatch(new RegExp(`^mycelium: port ${port} is in use: pass --port N`))
      expect(r.out).not.toContain("[1/5]")
      expect(snapshot(dir)).toEqual(before)
    } finally {
      blocker.close()
    }
  })

  it("without hono: exit 2 with the one line docs/cli.md shows, nothing written", () => {
    const dir = join(cwd, "nohono")
    const r = cliRunner(cwd, { nodeArgs: withoutPackage("hono"), timeout: 20_000 })([
      ...["demo", "--serve", "--port", "0", "--ledger", join(dir, "l.json")],
    ])
    expect(r.code, r.err).toBe(2)
    expect(r.err.trim()).toBe(
      "mycelium: 'mycelium demo --serve' needs the optional package 'hono': run `npm install hono jose`",
    )
    expect(r.out).toBe("")
    expect(existsSync(join(dir, "l.json")) || existsSync(join(dir, "demo-receipts.jsonl"))).toBe(false)
  })
})

describe("one demo per directory at a time", () => {
  it("a second demo while one runs (here: a live pid in the lock) stops with one line, exit 2", () => {
    const dir = join(cwd, "busy")
    mkdirSync(dir)
    writeFileSync(join(dir, ".demo.lock"), String(process.pid))
    const r = run(["demo", "--ledger", join(dir, "l.json")])
    expect(r.code, r.out).toBe(2)
    expect(r.err).toMatch(/^mycelium: demo: another demo \(pid \d+\) is running in .*busy/)
    expect(r.err.trim().split("\n")).toHaveLength(1)
    expect(existsSync(join(dir, "demo-receipts.jsonl"))).toBe(false)
  })

  it("a lock left by a process that is gone is taken over, and removed at exit", () => {
    const dir = join(cwd, "stale")
    mkdirSync(dir)
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    }).stdout
    writeFileSync(join(dir, ".demo.lock"), dead)
    const r = run(["demo", "--ledger", join(dir, "l.json")])
    expect(r.code, r.err).toBe(0)
    expect(existsSync(join(dir, ".demo.lock"))).toBe(false)
  })

  it("demo --serve holds it while it serves, and Ctrl-C (or SIGTERM) releases it", async () => {
    const dir = join(cwd, "served")
    const ledger = join(dir, "l.json")
    const { child, ready } = startUntil(
      ["demo", "--serve", "--port", "0", "--ledger", ledger],
      /listening on/,
    )
    await ready
    const before = snapshot(dir)
    const second = run(["demo", "--ledger", ledger])
    expect(second.code, second.out).toBe(2)
    expect(second.err).toContain(`another demo (pid ${child.pid}) is running`)
    expect(snapshot(dir)).toEqual(before)
    const exited = new Promise((resolve) => child.once("exit", resolve))
    child.kill("SIGINT")
    await exited
    expect(existsSync(join(dir, ".demo.lock"))).toBe(false)
  }, 60_000)
})

describe("a stale demo lock taken over by several demos at once", () => {
  it("only one takes it (each removed the lock another had just taken)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mycelium-lock-race-"))
    for (let round = 0; round < 3; round++) {
      writeFileSync(join(dir, ".demo.lock"), "999999") // a demo killed with SIGKILL: its pid is gone
      const kids = Array.from({ length: 4 }, () => {
        const child = spawn(process.execPath, [bundled("test/cli/demo-lock-child.ts"), dir])
        let out = ""
        const waiters: (() => void)[] = []
        child.stdout.on("data", (d) => {
          out += String(d)
          for (const w of waiters.splice(0)) w()
        })
        const said = (word: RegExp) =>
          new Promise<string>((done) => {
            const look = () => {
              const m = word.exec(out)
              if (m) done(m[0])
              else waiters.push(look)
            }
            look()
          })
        const closed = new Promise((done) => child.once("close", done))
        return { child, said, closed }
      })
      await Promise.all(kids.map((k) => k.said(/READY/)))
      const go = `${Date.now() + 300}\n`
      for (const k of kids) k.child.stdin.write(go)
      const outs = await Promise.all(kids.map((k) => k.said(/LOCKED|BUSY/)))
      for (const k of kids) k.child.stdin.end()
      await Promise.all(kids.map((k) => k.closed))
      expect(outs.filter((o) => o === "LOCKED")).toHaveLength(1)
    }
    // Every demo has exited (closed above), so none is still using the dir.
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)
})

describe("init -o PATH", () => {
  it("names PATH in its hints and points $schema at the project's node_modules from there", () => {
    const project = join(cwd, "project")
    mkdirSync(project)
    writeFileSync(join(project, "package.json"), "{}")
    const r = cliRunner(project)(["init", "-o", "config/mycelium.yaml"])
    expect(r.code, r.err).toBe(0)
    expect(r.out).toContain('loadConfig("config/mycelium.yaml")')
    expect(r.out).toMatch(/doctor -c config\/mycelium\.yaml$/m)
    const first = readFileSync(join(project, "config/mycelium.yaml"), "utf8").split("\n")[0]
    expect(first).toBe(
      "# yaml-language-server: $schema=../node_modules/mycelium-runtime/schemas/mycelium.schema.json",
    )
    const doctor = cliRunner(project)(["doctor", "-c", "config/mycelium.yaml", "--no-connectivity"])
    expect(doctor.code, doctor.out + doctor.err).toBe(0)
    // At the root, the hints stay as they were.
    const root = cliRunner(project)(["init"])
    expect(root.out).toMatch(/doctor$/m)
    expect(readFileSync(join(project, "mycelium.yaml"), "utf8")).toContain("$schema=./node_modules/")
  })
})

describe("parseArgs errors", () => {
  it.each([
    [["serve", "--port", "-5"], "serve: --port needs a value (for one starting with '-', write --port=-X)"],
    [
      ["doctor", "--timeout", "-1"],
      "doctor: --timeout needs a value (for one starting with '-', write --timeout=-X)",
    ],
    [["demo", "--stroe", "memory"], "demo: unknown option '--stroe' (see mycelium demo --help)"],
    [["doctor", "-c"], "doctor: --config needs a value"],
    [["demo", "--serve=yes"], "demo: --serve takes no value"],
    [["serve", "extra"], "serve: unexpected argument 'extra' (see mycelium serve --help)"],
  ])("%j: one line of ours, exit 2", (args, message) => {
    const r = run(args)
    expect(r.code, r.err).toBe(2)
    expect(r.err).toBe(`mycelium: ${message}\n(mycelium --help lists the commands)\n`)
  })
})

describe("serve's curl hint", () => {
  it("with --token names the flag's value, never $MYCELIUM_TOKEN nor the token", async () => {
    const ledger = join(cwd, "hint.json")
    const args = ["serve", "--port", "0", "--ledger", ledger, "--token", "s3cret-token"]
    const out = await startUntil(args, /\/v1\/transitions\n/, { MYCELIUM_TOKEN: "" }).ready
    expect(out).toContain('curl -H "authorization: Bearer <the --token value>" http://127.0.0.1:')
    expect(out).not.toContain("$MYCELIUM_TOKEN")
    expect(out).not.toContain("s3cret-token")
  })

  it("with MYCELIUM_TOKEN sends the variable", async () => {
    const ledger = join(cwd, "hint-env.json")
    const args = ["serve", "--port", "0", "--ledger", ledger]
    const out = await startUntil(args, /\/v1\/transitions\n/, { MYCELIUM_TOKEN: "env-token" }).ready
    expect(out).toContain('curl -H "authorization: Bearer $MYCELIUM_TOKEN" http://127.0.0.1:')
    expect(out).not.toContain("env-token")
  })
})
