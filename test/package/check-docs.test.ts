// The docs checker fails on a block that does not compile and points at its Markdown line; nocheck opts out.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const dir = mkdtempSync(join(tmpdir(), "mycelium-docs-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const check = (...pages: string[]) => {
  const r = spawnSync(process.execPath, ["scripts/check-docs.mjs", ...pages], { encoding: "utf8" })
  return { code: r.status, out: r.stdout + r.stderr }
}
const fence = "```"

describe("scripts/check-docs.mjs", () => {
  it("passes blocks that compile, with the package's imports and the prelude's placeholders", () => {
    const page = join(dir, "good.md")
    writeFileSync(
      page,
      [
        "# Good",
        `${fence}ts`,
        'import { ActionLedger, MemoryLedgerStorage } from "mycelium-runtime"',
        "const ledger = new ActionLedger({ storage: new MemoryLedgerStorage() })",
        "await gateway.charge(1, 'acct')",
        "void ledger",
        fence,
        `${fence}ts`,
        "const ledger = 1 // a second block may reuse a name",
        fence,
      ].join("\n"),
    )
    const r = check(page)
    expect(r.code, r.out).toBe(0)
    expect(r.out).toContain("2 TypeScript blocks in 1 pages")
  }, 60_000)

  it("fails on a type error, names the Markdown line, and skips nocheck blocks", () => {
    const page = join(dir, "bad.md")
    writeFileSync(
      page,
      [
        "# Bad",
        `${fence}ts nocheck`,
        "this is not TypeScript",
        fence,
        "",
        `${fence}ts`,
        'import { ActionLedger } from "mycelium-runtime"',
        'const n: number = "not a number"',
        "void [n, ActionLedger]",
        fence,
      ].join("\n"),
    )
    const r = check(page)
    expect(r.code).toBe(1)
    expect(r.out).toContain("1 marked nocheck")
    expect(r.out).toMatch(/bad\.md:8:7: error TS2322/)
  }, 60_000)
})
