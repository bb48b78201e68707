// `mycelium: refused: ...` says the ledger declined and nothing changed. A release printed it for every ledger error:
// for one that was recorded while its receipt could not be stored (the operator, told "refused", settled a row that
// was already settled), and for a store it could not write, where `list` names the path as docs/cli.md shows.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { FileTaskStore } from "../../src/adapters/file-tasks.ts"
import { cliCommand } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-not-refused-"))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
// File modes stop no write of root's: as root, the CLI runs as nobody (its bundle folder opened to it).
chmodSync(cwd, 0o777)
const root = process.getuid?.() === 0
if (root) chmodSync(dirname(cliCommand()[1][0] as string), 0o755)
const run = cliRunner(cwd, { timeout: 20_000, ...(root ? { uid: 65534, gid: 65534 } : {}) })
const now = () => Date.now() / 1000

/** An UNKNOWN payment whose lease lapsed: an operator's to settle. */
async function stuck(file: string): Promise<FileLedgerStorage> {
  const storage = new FileLedgerStorage(file)
  const t = now()
  await storage.set({
    ...newEntry({ requestId: "pay:1", tool: "pay", owner: "w1", fence: 1, leaseUntil: t - 1 }, t - 5),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
  return storage
}

const RELEASE = ["pay:1", "--verified", "completed", "--by", "ops", "--reason", "the provider shows it"]

describe("a release the ledger did not refuse is not printed as refused", () => {
  it("recorded, its receipt not stored: says so, exit 1, and the row is released", async () => {
    mkdirSync(join(cwd, "signed"))
    const storage = await stuck(join(cwd, "signed/ledger.json"))
    // The receipt file can be read (the chain is signed on) but not written: its folder refuses the store's lock.
    mkdirSync(join(cwd, "signed/audit"))
    writeFileSync(join(cwd, "signed/audit/receipts.jsonl"), "")
    chmodSync(join(cwd, "signed"), 0o777)
    chmodSync(join(cwd, "signed/audit"), 0o555)
    writeFileSync(
      join(cwd, "signed/mycelium.yaml"),
      'transition:\n  agent_id: ops\n  policy_version: "1"\n' +
        "action_ledger:\n  storage: file\n  path: signed/ledger.json\n  tools: [pay]\n" +
        "audit_receipt:\n  signing_key_env: RECEIPT_KEY\n  storage: file\n  path: signed/audit/receipts.jsonl\n" +
        "tools:\n  pay:\n    side_effect_class: non_idempotent_mutate\n    audit_receipt: true\n",
    )
    const r = run(["transitions", "release", ...RELEASE, "-c", "signed/mycelium.yaml"], { RECEIPT_KEY: "k" })
    expect(r.code, r.err).toBe(1)
    expect(r.err).not.toMatch(/^mycelium: refused/)
    expect(r.err).toMatch(
      /^mycelium: Request 'pay:1' is recorded \(receipt_ref rcpt-\w+\) but its receipt was not stored: EACCES.*Restore the receipt store\.\n$/,
    )
    expect(await storage.get("pay:1")).toMatchObject({
      operatorResolution: "completed",
      terminalOutcome: "COMPLETED",
    })
  })

  it("a ledger folder it cannot write: the path named as list names it, exit 1, nothing released", async () => {
    mkdirSync(join(cwd, "ro"))
    const storage = await stuck(join(cwd, "ro/ledger.json"))
    await new FileTaskStore(join(cwd, "ro/tasks.json")).swap("t1", null, {
      row: {
        request_id: "t1",
        task: "import",
        status: "failed",
        args: [],
        kwargs: {},
        result: null,
        error: "upstream 503",
        started_at: now() - 5,
        finished_at: now() - 4,
      },
      lease: null,
    })
    chmodSync(join(cwd, "ro"), 0o555)
    const denied =
      /^mycelium: cannot open \S+\/ro\/(ledger|tasks)\.json\.lock\.ts\.tmp-\S+ \(EACCES: permission denied\): check the path and its permissions\n$/
    for (const args of [
      ["transitions", "release", ...RELEASE, "--file", "ro/ledger.json"],
      ["tasks", "release", "t1", ...RELEASE.slice(1), "--file", "ro/tasks.json"],
    ]) {
      const r = run(args)
      expect(r.code, r.err).toBe(1)
      expect(r.err).toMatch(denied)
    }
    expect((await storage.get("pay:1"))?.operatorResolution).toBeNull()
  })
})
