// With `audit_receipt:` in mycelium.yaml, an operator's release from the CLI is signed into the same receipt file
// as the workers' outcomes, and `mycelium receipts verify` accepts it; without the signing key the release is a
// config error (exit 2) that writes nothing.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { loadConfig } from "../../src/node/config.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-release-rcpt-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const run = cliRunner(cwd)

const CONFIG = `transition:
  agent_id: ops-agent
  policy_version: "1"
action_ledger:
  storage: file
  path: ledger.json
audit_receipt:
  signing_key_env: RECEIPT_KEY
  storage: file
  path: receipts.jsonl
  auto: true
tools:
  pay:
    ledger: true
    side_effect_class: non_idempotent_mutate
`

describe("mycelium transitions release with audit_receipt", () => {
  it("signs the release into the configured receipt file; no key is exit 2 and writes nothing", async () => {
    writeFileSync(join(cwd, "mycelium.yaml"), CONFIG)
    const storage = new FileLedgerStorage(join(cwd, "ledger.json"))
    const now = Date.now() / 1000
    await storage.set({
      ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 1 }, now - 5),
      terminalOutcome: "UNKNOWN",
      sideEffectBoundary: "maybe_crossed",
    })
    const release = ["transitions", "release", "pay:1", "--verified", "completed", "--by", "ops"]
    const args = [...release, "--reason", "the provider shows the charge", "--result-json", '{"ok":true}']

    const noKey = run(args)
    expect(noKey.code, noKey.err).toBe(2)
    expect(noKey.err).toContain("RECEIPT_KEY")
    expect((await storage.get("pay:1"))?.operatorResolution).toBeNull()

    const ok = run(args, { RECEIPT_KEY: "k-ops" })
    expect(ok.code, ok.err).toBe(0)
    expect(ok.out).toMatch(/signed receipt \S+/)
    const row = await storage.get("pay:1")
    expect(row).toMatchObject({ operatorResolution: "completed", terminalOutcome: "COMPLETED" })
    expect(row?.receiptRef).toBeTruthy()

    const verify = run(["receipts", "verify", "--key-env", "RECEIPT_KEY", "--require-chain", "--json"], {
      RECEIPT_KEY: "k-ops",
    })
    expect(verify.code, verify.err).toBe(0)
    expect(JSON.parse(verify.out)).toMatchObject({ receipts: 1, ok: true, failures: [] })
    const wrongKey = run(["receipts", "verify", "--key-env", "RECEIPT_KEY"], { RECEIPT_KEY: "not-it" })
    expect(wrongKey.code).toBe(1)
  })

  it("signs a task release into the same chain as the failed task's receipt", async () => {
    const dir = mkdtempSync(join(cwd, "tasks-"))
    const cfg = join(dir, "mycelium.yaml")
    writeFileSync(
      cfg,
      `transition:\n  agent_id: ops-agent\n  policy_version: "1"\ntask_ledger:\n  storage: file\n  path: ${join(dir, "tasks.json")}\n` +
        `audit_receipt:\n  signing_key_env: RECEIPT_KEY\n  storage: file\n  path: ${join(dir, "receipts.jsonl")}\n  auto: true\n` +
        "tasks:\n  import_batch:\n    ledger: true\n    id_from: [batch]\n",
    )
    const config = await loadConfig(cfg, { env: { RECEIPT_KEY: "k-ops" }, onWarning: () => {} })
    const importBatch = config.applyTask("import_batch", async (_a: { batch: string }) => {
      throw new Error("upstream 503")
    })
    await expect(importBatch({ batch: "b2" })).rejects.toThrow("upstream 503")
    const release = ["tasks", "release", "import_batch:batch=b2", "-c", cfg, "--verified", "completed"]
    const args = [
      ...release,
      "--by",
      "ops",
      "--reason",
      "imported by hand",
      "--result-json",
      '{"by_hand":true}',
    ]
    const noKey = run(args)
    expect(noKey.code, noKey.err).toBe(2)
    expect(noKey.err).toContain("RECEIPT_KEY")
    expect(run(args, { RECEIPT_KEY: "k-ops" }).code).toBe(0)
    const verify = run(
      ["receipts", "verify", "-c", cfg, "--key-env", "RECEIPT_KEY", "--require-chain", "--json"],
      {
        RECEIPT_KEY: "k-ops",
      },
    )
    expect(verify.code, verify.err).toBe(0)
    // The failed run's receipt, then the operator's release: one chain.
    expect(JSON.parse(verify.out)).toMatchObject({ receipts: 2, ok: true, failures: [] })
  })
})
