// `mycelium serve` settles releases by the policy `mycelium transitions release` applies to the same ledger file:
// without a config, a lapsed lease whose worker may be alive is refused on both; with mycelium.yaml, its
// `transition:` settings decide on both, and its `audit_receipt:` signs the release served over HTTP too.
import type { ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { serveOnFreePort } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const root = mkdtempSync(join(tmpdir(), "mycelium-serve-policy-"))
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) c.kill("SIGTERM")
  rmSync(root, { recursive: true, force: true })
})

const serveIn = (cwd: string, args: string[], env: Record<string, string> = {}): Promise<number> =>
  serveOnFreePort(children, args, { cwd, env })

/** Lapsed a second ago, heartbeat 3 s ago: the worker may be alive (no death signal of any kind). */
async function lapsed(file: string, ...ids: string[]): Promise<void> {
  const storage = new FileLedgerStorage(file)
  const t = Date.now() / 1000
  for (const id of ids)
    await storage.set(
      newEntry(
        { requestId: id, tool: "pay", owner: "w1", fence: 1, leaseUntil: t - 1, lastHeartbeatAt: t - 3 },
        t - 3,
      ),
    )
}

async function releaseOver(port: number, id: string) {
  const r = await fetch(`http://127.0.0.1:${port}/v1/transitions/${id}/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ verified: "completed", reason: "charge found", result: { id: "pi_1" } }),
  })
  const json = (await r.json()) as { error?: { code: string }; transition?: Record<string, unknown> }
  return { status: r.status, code: json.error?.code, transition: json.transition }
}

const cliRelease = (id: string) => [
  ...["transitions", "release", id, "--verified", "completed", "--by", "ops"],
  ...["--reason", "charge found", "--result-json", '{"id":"pi_1"}'],
]

describe("mycelium serve: the transitions commands' release policy", () => {
  it("no config: the CLI and the served API both refuse a completed release while the worker may live", async () => {
    const dir = join(root, "plain")
    mkdirSync(dir)
    const file = join(dir, "ledger.json")
    await lapsed(file, "pay-1")
    const cli = cliRunner(dir)([...cliRelease("pay-1"), "--file", file])
    expect(cli.code, cli.err).toBe(1)
    expect(cli.err).toContain("appears alive")
    const port = await serveIn(dir, ["--ledger", file])
    expect(await releaseOver(port, "pay-1")).toMatchObject({ status: 409, code: "ledger_worker_alive" })
    expect((await new FileLedgerStorage(file).get("pay-1"))?.operatorResolution).toBeNull()
  })

  it("./mycelium.yaml: its transition settings decide on both, and its audit_receipt signs the served release", async () => {
    const dir = join(root, "configured")
    mkdirSync(join(dir, ".mycelium"), { recursive: true })
    writeFileSync(
      join(dir, "mycelium.yaml"),
      `transition:\n  agent_id: ops-agent\n  policy_version: "1"\n  reclaim_requires_death_signal: false\n` +
        "action_ledger:\n  storage: file\n  path: .mycelium/ledger.json\n" +
        "audit_receipt:\n  signing_key_env: RECEIPT_KEY\n  storage: file\n  path: receipts.jsonl\n  auto: true\n" +
        "tools:\n  pay:\n    ledger: true\n    side_effect_class: non_idempotent_mutate\n",
    )
    const file = join(dir, ".mycelium", "ledger.json")
    await lapsed(file, "pay-1", "pay-2")
    const env = { RECEIPT_KEY: "k-ops" }
    const cli = cliRunner(dir)(cliRelease("pay-1"), env)
    expect(cli.code, cli.err).toBe(0)
    const port = await serveIn(dir, [], env)
    const served = await releaseOver(port, "pay-2")
    expect(served).toMatchObject({ status: 200, transition: { operator_resolution: "completed" } })
    expect(served.transition?.receipt_ref).toBeTruthy()
  })
})
