// The file store under Deno and Bun (the npm-installed binaries), not only Node.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const SCRIPT = fileURLToPath(new URL("./file-runtime-smoke.ts", import.meta.url))
const GUARDS = fileURLToPath(new URL("./file-guards-runtime-smoke.ts", import.meta.url))
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
