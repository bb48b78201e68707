// The CLI on Deno and Bun, not only Node: the demo's checks pass and init writes a config doctor accepts.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const main = resolve("src/cli/main.ts")
const runtimes: Array<[string, string[]]> = [
  ["deno", [resolve("node_modules/.bin/deno"), "run", "-A", main]],
  ["bun", [resolve("node_modules/.bin/bun"), main]],
]

describe.each(runtimes)("mycelium on %s", (_name, [bin, ...pre]) => {
  const cwd = mkdtempSync(join(tmpdir(), "mycelium-rt-"))
  afterAll(() => rmSync(cwd, { recursive: true, force: true }))
  const run = (...args: string[]) =>
    spawnSync(bin as string, [...pre, ...args], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    })

  it("demo passes every check (exit 0)", () => {
    const r = run("demo", "--store", "memory")
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toContain("re-runs after release: 1")
  })

  it("init then doctor", () => {
    expect(run("init").status).toBe(0)
    const d = run("doctor", "--no-connectivity")
    expect(d.status, d.stderr).toBe(0)
    expect(d.stdout).toContain("config.load")
  })
})
