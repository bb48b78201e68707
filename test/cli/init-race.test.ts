// Found by an audit: `mycelium init` without --force checked that the path was free, then renamed its new file into
// place, so a file created in between (another init, an editor's save) was replaced. Now the new file is linked to
// the name, which fails on a name taken; --force still replaces. The file created "in between" is made by a preload
// that writes it as soon as init has written its temporary file.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-init-race-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))

const THEIRS = "# theirs: written while init ran\n"

/** Node arguments that preload `code`, with node:fs's functions replaced as the CLI's imports see them. */
const preload = (code: string): string[] => [
  "--import",
  `data:text/javascript,${encodeURIComponent(`import fs from "node:fs"
import { syncBuiltinESMExports } from "node:module"
${code}
syncBuiltinESMExports()`)}`,
]

// Once init has written its temporary file, another writer creates the file at the name it is for.
const RACE = `const write = fs.writeFileSync
fs.writeFileSync = (p, ...rest) => {
  write(p, ...rest)
  if (/\\.partial-\\d+$/.test(String(p))) write(String(p).replace(/\\.partial-\\d+$/, ""), ${JSON.stringify(THEIRS)})
}`
// A file system without hard links (FAT, exFAT, some network mounts).
const NO_LINKS = `fs.linkSync = () => {
  throw Object.assign(new Error("EPERM: operation not permitted, link"), { code: "EPERM" })
}`

function init(name: string, code: string, ...args: string[]) {
  const dir = join(cwd, name)
  mkdirSync(dir)
  const r = cliRunner(dir, { nodeArgs: preload(code), timeout: 20_000 })(["init", ...args])
  return { ...r, text: readFileSync(join(dir, "mycelium.yaml"), "utf8"), files: readdirSync(dir) }
}

describe("mycelium init while another writer creates the file", () => {
  it("without --force keeps the other file and says it exists (it was replaced)", () => {
    const r = init("plain", RACE)
    expect(r.text).toBe(THEIRS)
    expect(r.code).toBe(1)
    expect(r.err).toContain("mycelium.yaml already exists (use --force to overwrite)")
    expect(r.files).toEqual(["mycelium.yaml"])
  })

  it("with --force replaces it, as --force does", () => {
    const r = init("force", RACE, "--force")
    expect(r.code, r.err).toBe(0)
    expect(r.text).toContain("subagent_task")
    expect(r.files).toEqual(["mycelium.yaml"])
  })

  it("on a file system without hard links: writes a free name, keeps a taken one", () => {
    const free = init("no-links", NO_LINKS)
    expect(free.code, free.err).toBe(0)
    expect(free.text).toContain("subagent_task")
    expect(free.files).toEqual(["mycelium.yaml"])
    const taken = init("no-links-race", `${NO_LINKS}\n${RACE}`)
    expect(taken.text).toBe(THEIRS)
    expect(taken.code).toBe(1)
    expect(taken.err).toContain("mycelium.yaml already exists (use --force to overwrite)")
    expect(taken.files).toEqual(["mycelium.yaml"])
  })
})
