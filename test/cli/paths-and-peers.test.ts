// What a newcomer met: `receipts verify --jwks` without jose as a raw module error, a store named by flag blamed
// on a mycelium.yaml that did not exist, `Error: EACCES` from init, demo and receipts verify, and `export -o` into
// a missing folder told to remove a file.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileAccessError, fileAccessError } from "../../src/cli/errors.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner, withoutPackage } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-paths-peers-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// The permission tests run the CLI as nobody when this is root: file modes stop no read or write of root's.
chmodSync(cwd, 0o777)
const run = cliRunner(cwd)

/** Runs the CLI with `pkg` resolving as Node resolves a package that is not installed. */
const runWithout = (pkg: string, args: string[], env: Record<string, string> = {}) =>
  cliRunner(cwd, { nodeArgs: withoutPackage(pkg), timeout: 20_000 })(args, env)

const root = process.getuid?.() === 0
const asNobody = root ? { uid: 65534, gid: 65534 } : {}
// mkdtemp made this run's CLI bundle folder 0700: nobody could not load it.
if (root) chmodSync(dirname(cliCommand()[1][0] as string), 0o755)
const runAsUser = (args: string[]) =>
  cliRunner(cwd, { timeout: 20_000, ...asNobody })(args, { MYCELIUM_SIGNING_KEY: "k" })

describe("optional packages the CLI needs are named with the npm install line", () => {
  writeFileSync(join(cwd, "r.jsonl"), "")
  writeFileSync(join(cwd, "jwks.json"), '{"keys":[]}')

  it("receipts verify --jwks without jose: exit 2, the one line", () => {
    const r = runWithout("jose", ["receipts", "verify", "r.jsonl", "--jwks", "jwks.json"])
    expect(r.code, r.err).toBe(2)
    expect(r.err.trim()).toBe(
      "mycelium: 'mycelium receipts verify --jwks' needs the optional package 'jose': run `npm install jose`",
    )
  })

  it("a --jwks file that is not there is named first, with or without jose", () => {
    const r = runWithout("jose", ["receipts", "verify", "r.jsonl", "--jwks", "nope.json"])
    expect(r.code, r.err).toBe(2)
    expect(r.err).toMatch(/^mycelium: --jwks nope\.json: not a readable JSON Web Key Set \(ENOENT/)
  })

  it("a store named by flag or variable, pg missing: the error names the flag or variable, no mycelium.yaml", () => {
    const dsn = "postgres://app@127.0.0.1:1/app"
    const need = "storage 'postgres' needs the package 'pg': npm install pg"
    for (const [args, env, what] of [
      [["transitions", "list", "--postgres-dsn", dsn], {}, "--postgres-dsn"],
      [["tasks", "list", "--postgres-dsn", dsn], {}, "--postgres-dsn"],
      [["transitions", "list"], { MYCELIUM_POSTGRES_DSN: dsn }, "MYCELIUM_POSTGRES_DSN"],
    ] as const) {
      const r = runWithout("pg", [...args], env)
      expect(r.code, r.err).toBe(2)
      expect(r.err.trim()).toBe(`mycelium: ${what}: ${need}`)
    }
  })
})

describe("a path the command cannot read or write: one line naming it, exit 1", () => {
  const rodir = join(cwd, "rodir")
  mkdirSync(rodir, { mode: 0o555 })
  chmodSync(rodir, 0o555)
  writeFileSync(join(cwd, "unread.yaml"), "x: 1\n")
  chmodSync(join(cwd, "unread.yaml"), 0o000)
  writeFileSync(join(cwd, "unread.json"), "{}")
  chmodSync(join(cwd, "unread.json"), 0o000)
  const denied = (path: string) =>
    new RegExp(
      `^mycelium: cannot open ${path} \\(EACCES: permission denied\\): check the path and its permissions\\n$`,
    )

  it.each([
    [["init", "-o", "rodir/x.yaml"], "rodir/x\\.yaml"],
    [["init", "-o", "unread.yaml", "--force"], "unread\\.yaml"],
    [["demo", "--ledger", "rodir/l.json"], "rodir/\\.demo\\.lock"],
    [["receipts", "verify", "unread.yaml"], ".*unread\\.yaml"],
    // The stores wrap Node's error in their "unavailable" one: the path is named all the same.
    [["transitions", "list", "--file", "unread.json"], ".*unread\\.json"],
    [["tasks", "list", "--file", "unread.json"], ".*unread\\.json"],
  ])("%j", (args, path) => {
    const r = runAsUser(args)
    expect(r.code, r.err).toBe(1)
    expect(r.err).toMatch(denied(path))
  })

  it("only a wrapper that quotes its cause is looked through, and a cause chain that loops ends", () => {
    const fsError = Object.assign(new Error("EACCES: permission denied, open '/x/l.json'"), {
      code: "EACCES",
      path: "/x/l.json",
      syscall: "open",
    })
    const quoting = new Error(`ledger storage unavailable during list_all: Error: ${fsError.message}`, {
      cause: fsError,
    })
    expect(fileAccessError(quoting)).toBeInstanceOf(FileAccessError)
    const advice = new Error("pythonLock needs the flock command on PATH (util-linux)", { cause: fsError })
    expect(fileAccessError(advice)).toBe(advice)
    const loop = new Error("same")
    loop.cause = loop
    expect(fileAccessError(loop)).toBe(loop)
  })

  it("receipts verify with an unreadable chain sidecar names the sidecar", () => {
    expect(run(["demo", "--ledger", "signed/l.json"]).code).toBe(0)
    chmodSync(join(cwd, "signed"), 0o755)
    chmodSync(join(cwd, "signed/demo-receipts.jsonl"), 0o644)
    chmodSync(join(cwd, "signed/demo-receipts.jsonl.chain.jsonl"), 0o000)
    const r = runAsUser(["receipts", "verify", "signed/demo-receipts.jsonl"])
    expect(r.code, r.err).toBe(1)
    expect(r.err).toMatch(denied(".*signed/demo-receipts\\.jsonl\\.chain\\.jsonl"))
  })

  it("a chain sidecar that is a directory is a usage error naming it, exit 2", () => {
    writeFileSync(join(cwd, "d.jsonl"), "")
    mkdirSync(join(cwd, "d.jsonl.chain.jsonl"))
    const r = run(["receipts", "verify", "d.jsonl"], { MYCELIUM_SIGNING_KEY: "k" })
    expect(r.code, r.err).toBe(2)
    expect(r.err).toMatch(/^mycelium: the chain sidecar d\.jsonl\.chain\.jsonl is a directory: pass a file/)
  })
})

describe("receipts export -o into a folder that does not exist", () => {
  it("is a usage error naming the folder, exit 2, nothing fetched", () => {
    const r = run(["receipts", "export", "--url", "http://127.0.0.1:1", "-o", "nope/x.jsonl"])
    expect(r.code, r.err).toBe(2)
    expect(r.err).toMatch(
      /^mycelium: -o nope\/x\.jsonl: the folder nope does not exist: create it or pick another -o\n/,
    )
  })
})
