// The operator commands given hostile paths and files: a directory, /dev/zero, a symlink to something else, a YAML
// alias bomb, a key set that is not JSON. Each must end quickly with one line and the documented exit code (2 for a
// path or config the user must fix, 1 for a file that fails its check), never a stack trace or an endless read.
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-adv-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

/** The CLI as a user runs it; killed after 20 s, so an endless read shows as a null exit code, not a hung suite. */
function mycelium(...args: string[]) {
  const r = cliRunner(cwd, { timeout: 20_000 })(args, { MYCELIUM_SIGNING_KEY: "k" })
  return { code: r.code, err: r.err }
}

function oneLineNoStack(err: string): void {
  expect(err).not.toMatch(/\n\s+at /)
  expect(err.split("\n")[0]).toMatch(/^mycelium: /)
}

mkdirSync(join(cwd, "a-dir"))
writeFileSync(join(cwd, "receipts.jsonl"), "")
writeFileSync(join(cwd, "not-json.jwks"), "{not json")
writeFileSync(join(cwd, "garbage.jsonl"), 'garbage\n{"a":1}\n')
writeFileSync(join(cwd, "passwd.txt"), "root:x:0:0:root:/root:/bin/sh\n")
symlinkSync(join(cwd, "passwd.txt"), join(cwd, "link-to-other"))
let bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
for (let i = 1, prev = "a"; i < 10; prev = `l${i}`, i++)
  bomb += `l${i}: &l${i} [${Array(9).fill(`*${prev}`).join(",")}]\n`
writeFileSync(join(cwd, "bomb.yaml"), bomb)

describe("operator commands with hostile paths", () => {
  it("a directory or a device where a file belongs: exit 2 naming it, without reading forever", () => {
    for (const path of ["a-dir", "/dev/zero"]) {
      for (const args of [
        ["receipts", "verify", path],
        ["receipts", "verify", "receipts.jsonl", "--jwks", path],
        ["transitions", "list", "--file", path],
        ["tasks", "list", "--file", path],
        ["doctor", "-c", path],
        ["serve", "--port", "0", "--ledger", path],
      ]) {
        const r = mycelium(...args)
        expect([args.join(" "), r.code]).toEqual([args.join(" "), 2])
        expect(r.err).toContain(path)
        expect(r.err).toMatch(/not a regular file|a directory/)
        oneLineNoStack(r.err)
      }
    }
  }, 120_000)

  it("a key set that is not JSON, or missing, is a usage error naming --jwks", () => {
    for (const jwks of ["not-json.jwks", "missing.jwks"]) {
      const r = mycelium("receipts", "verify", "receipts.jsonl", "--jwks", jwks)
      expect([jwks, r.code]).toEqual([jwks, 2])
      expect(r.err).toContain(`--jwks ${jwks}`)
      oneLineNoStack(r.err)
    }
  })

  it("a YAML alias bomb is a config error (exit 2) naming the file, not a ReferenceError", () => {
    const r = mycelium("doctor", "-c", "bomb.yaml")
    expect(r.code).toBe(2)
    expect(r.err).toMatch(/^mycelium: bomb\.yaml:7:10 at 'l6\[0\]': aliases expand to over a million/)
    oneLineNoStack(r.err)
  })

  it("held: garbage receipt lines and a symlink to a non-ledger file fail their check (exit 1), naming the file", () => {
    const receipts = mycelium("receipts", "verify", "garbage.jsonl")
    expect(receipts.code).toBe(1)
    expect(receipts.err).toContain("garbage.jsonl line 1 is not JSON")
    oneLineNoStack(receipts.err)
    const ledger = mycelium("transitions", "list", "--file", "link-to-other")
    expect(ledger.code).toBe(1)
    // A symlinked ledger is read and written at its target (it shares the target's lock): the target is named.
    expect(ledger.err).toMatch(/passwd\.txt is corrupt/)
    oneLineNoStack(ledger.err)
  })
})

// Written in place, `init --force` over a config a crash or a full disk cut short left half a file; it now writes a
// new file and renames it over the old one, so the old text stays whole until the new one is, and a hard link to the
// old file is not written through.
it("init --force replaces the file whole, never writing into the old one", () => {
  const dir = join(cwd, "init-force")
  mkdirSync(dir)
  const path = join(dir, "mycelium.yaml")
  writeFileSync(path, "# mine\n")
  linkSync(path, join(dir, "kept.yaml"))
  // The mode is the old file's, past the umask: a group's shared config stayed writable to the group.
  chmodSync(path, 0o660)
  expect(mycelium("init", "-o", path, "--force").code).toBe(0)
  expect(statSync(path).mode & 0o777).toBe(0o660)
  expect(readFileSync(path, "utf8")).toContain("subagent_task")
  expect(readFileSync(join(dir, "kept.yaml"), "utf8")).toBe("# mine\n")
  expect(readdirSync(dir).sort()).toEqual(["kept.yaml", "mycelium.yaml"])
})
