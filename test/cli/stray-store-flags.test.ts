// A store flag the operator commands would drop (`--prefix` without Redis, `--table` without PostgreSQL, a second
// store flag) is a usage error: dropped, `release ID --prefix staging:` settled the row of that id in the store of
// mycelium.yaml, another deployment's, whose maybe-run payment a redispatch then ran again.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { REDIS_URL, runTag } from "../adapters/servers/env.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-stray-flags-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

const CONFIG = `transition:
  agent_id: a
  policy_version: "1"
action_ledger:
  storage: file
  path: prod-ledger.json
  tools: [pay]
tools:
  pay:
    side_effect_class: non_idempotent_mutate
task_ledger:
  storage: file
  path: prod-tasks.json
`

describe("store flags the operator commands would drop", () => {
  it("release -c with --prefix or --table is exit 2 and leaves the configured row alone", async () => {
    writeFileSync(join(cwd, "mycelium.yaml"), CONFIG)
    const prod = new FileLedgerStorage(join(cwd, "prod-ledger.json"))
    const now = Date.now() / 1000
    await prod.set({
      ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 10 }, now - 50),
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
      workerDeadAssertedAt: now - 5,
      workerDeadAssertedBy: "ops",
    })
    const release = ["transitions", "release", "pay:1", "--verified", "not-executed", "--by", "ops"]
    for (const [flag, value] of [
      ["--prefix", "staging:"],
      ["--table", "staging_ledger"],
    ]) {
      const r = run([...release, "--reason", "staging shows no charge", flag as string, value as string])
      expect([r.code, r.err]).toEqual([2, expect.stringContaining(`${flag} goes with`)])
      expect(r.err).not.toMatch(/\n\s+at /)
    }
    expect(await prod.get("pay:1")).toMatchObject({ operatorResolution: null, terminalOutcome: "UNKNOWN" })
  })

  it.each([
    [["transitions", "list", "--file", "a.json", "--redis-url", REDIS_URL], "--file and --redis-url"],
    [["transitions", "list", "--file", "a.json", "--ledger", "b.json"], "--file and --ledger"],
    [["transitions", "list", "--file", "a.json", "--prefix", "p:"], "--prefix goes with"],
    [["tasks", "list", "--file", "t.json", "--postgres-dsn", "postgres://u@127.0.0.1:1/db"], "--file and"],
    [["tasks", "list", "--table", "t"], "--table goes with"],
    [["tasks", "list", "--redis-url", REDIS_URL, "--table", "t"], "--table goes with"],
  ])("%j is exit 2", (args, message) => {
    const r = run(args)
    expect([r.code, r.err]).toEqual([2, expect.stringContaining(message)])
  })

  it("--prefix with MYCELIUM_REDIS_URL still selects the Redis store", () => {
    const r = run(["transitions", "list", "--prefix", `stray-${runTag("p")}:`], {
      MYCELIUM_REDIS_URL: REDIS_URL,
    })
    expect([r.code, r.err]).toEqual([0, ""])
    expect(r.out).toContain("no transitions found in redis redis://")
  })
})
