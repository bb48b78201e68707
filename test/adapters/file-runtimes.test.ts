// The file store under Deno and Bun (the npm-installed binaries), not only Node.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const SCRIPT = fileURLToPath(new URL("./file-runtime-smoke.ts", import.meta.url))
const GUARDS = fileURLToPath(new URL("./file-guards-runtime-smoke.ts", import.meta.url))
const AGE = fileURLToPath(new URL("./file-lock-age-smoke.ts", import.meta.url))
const BIN = fileURLToPath(new URL("../../node_modules/.bin/", import.meta.url))
const root = mkdtempSync(join(tmpdir(), "mycelium-file-rt-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const runtimes: Array<[string, string[]]> = [
  ["deno", ["run", "-A"]],
  ["bun", ["run"]],
]

describe("FileLedgerStorage in other runtimes", () => {
  for (const [name, args] of runtimes) {
    it(`${name}: one execution for 10 redispatches, file read back`, () => {
      // The binaries are devDependencies: missing means a broken install, which must fail, not skip.
      expect(existsSync(join(BIN, name)), `${name} is not installed; run npm ci`).toBe(true)
      const path = join(root, name, "ledger.json")
      const r = spawnSync(join(BIN, name), [...args, SCRIPT, path], { encoding: "utf8", timeout: 60_000 })
      expect(r.status, r.stderr).toBe(0)
      expect(JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}")).toEqual({
        runs: 1,
        results: 1,
        rows: 1,
        outcome: "COMPLETED",
      })
    })
  }
})

describe("the task, receipt and state-flush file stores in other runtimes", () => {
  for (const [name, args] of runtimes) {
    it(`${name}: a task runs once and replays from a fresh instance; receipts verify; a snapshot reads back`, () => {
      expect(existsSync(join(BIN, name)), `${name} is not installed; run npm ci`).toBe(true)
      const dir = join(root, `${name}-guards`)
      mkdirSync(dir, { recursive: true })
      const r = spawnSync(join(BIN, name), [...args, GUARDS, dir], { encoding: "utf8", timeout: 60_000 })
      expect(r.status, r.stderr).toBe(0)
      expect(JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "{}")).toEqual({
        taskRuns: 1,
        taskReplay: { day: "d1", n: 1 },
        receipts: 2,
        receiptsOk: true,
        state: { status: "completed", state: { page: 3 } },
      })
    })
  }
})

describe("Deno with the flags the docs give, not --allow-all", () => {
  const deno = join(BIN, "deno")
  const lastLine = (out: string) => JSON.parse(out.trim().split("\n").at(-1) ?? "{}")

  it("README's --allow-read=. --allow-write=. --allow-sys=hostname: a relative ledger path works", () => {
    // Resolving the path's links looked at every directory from / (here /tmp), which --allow-read=. refuses.
    const cwd = join(root, "deno-readme")
    mkdirSync(cwd, { recursive: true })
    const r = spawnSync(
      deno,
      [
        "run",
        "--no-prompt",
        "--allow-read=.",
        "--allow-write=.",
        "--allow-sys=hostname",
        SCRIPT,
        "ledger.json",
      ],
      { cwd, encoding: "utf8", timeout: 60_000 },
    )
    expect(r.status, r.stderr).toBe(0)
    expect(lastLine(r.stdout)).toEqual({ runs: 1, results: 1, rows: 1, outcome: "COMPLETED" })
    expect(existsSync(join(cwd, "ledger.json"))).toBe(true)
  })

  it("a lock whose holder's PID namespace is unknown is judged by its age, never by its pid", () => {
    // Deno grants /proc/self/ns/pid to --allow-all only, so its namespace is unknown. It read as the same
    // namespace as any other unknown one: a live holder in another container, whose pid is not in this one,
    // was judged dead and its lock taken at once (a paid call's result lost).
    const dir = join(root, "deno-pidns")
    mkdirSync(dir, { recursive: true })
    const path = join(dir, "ledger.json")
    const gone = spawnSync("true").pid as number // a pid no process has here now: the holder lives elsewhere
    writeFileSync(
      `${path}.lock.ts`,
      JSON.stringify({ pid: gone, host: hostname(), pidns: null, token: "1-a-b", at: Date.now() }),
    )
    const r = spawnSync(
      deno,
      [
        "run",
        "--no-prompt",
        "--allow-read",
        "--allow-write",
        "--allow-sys=hostname",
        "--allow-run",
        AGE,
        path,
      ],
      { encoding: "utf8", timeout: 60_000 },
    )
    expect(r.status, r.stderr).toBe(0)
    const { answer, ms } = lastLine(r.stdout)
    expect(answer).toBe("ledger_file_lock_timeout")
    expect(ms).toBeGreaterThanOrEqual(900)
  })
})
