// `mycelium tasks release` on a task-ledger file: what it refuses before writing (a live lease without --force, a
// verdict that is not exactly completed / not-executed, a result with not-executed), and that nothing changes then.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { TaskLedger } from "../../src/tasks.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-task-release-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

const release = (file: string, id: string, ...args: string[]) =>
  run(["tasks", "release", id, "--file", file, "--by", "ops", "--reason", "r", ...args])

describe("tasks release", () => {
  it("refuses a task under a live lease without --force (exit 1, row unchanged); with --force releases it", async () => {
    const file = join(cwd, "live.json")
    const ledger = new TaskLedger({ storage: new FileTaskStore(file), leaseTtl: 3600, leaseRenewInterval: 0 })
    let started = false
    void ledger.task("pay", () => {
      started = true
      return new Promise(() => {})
    })({}, { taskId: "T-live" })
    while (!started) await new Promise((r) => setTimeout(r, 5))
    const refused = release(file, "T-live", "--verified", "not-executed")
    expect(refused.code, refused.err).toBe(1)
    expect(refused.err).toContain("refused")
    expect((await ledger.get("T-live"))?.row.status).toBe("in-flight")
    const forced = release(file, "T-live", "--verified", "not-executed", "--force")
    expect(forced.code, forced.err).toBe(0)
    expect((await ledger.get("T-live"))?.row.status).toBe("failed")
  })

  it.each([
    ["--result-json with not-executed", ["--verified", "not-executed", "--result-json", '{"charged":true}']],
    ["a verdict that only ends in not-executed", ["--verified", "completed-not-executed"]],
    ["a verdict that only starts with not_executed", ["--verified", "not_executed-maybe"]],
  ])("refuses %s as a usage error (exit 2), writing nothing", async (_, args) => {
    const file = join(cwd, `failed-${args.length}-${args[1]}.json`)
    const ledger = new TaskLedger({ storage: new FileTaskStore(file), onWarning: () => {} })
    await expect(
      ledger.task("pay", async () => {
        throw new Error("503")
      })({}, { taskId: "P" }),
    ).rejects.toThrow("503")
    const r = release(file, "P", ...args)
    expect(r.code, r.err).toBe(2)
    expect((await ledger.get("P"))?.row).toMatchObject({ status: "failed", error: "Error: 503" })
  })
})
