// Chaos through the edge HTTP API (edge-chaos-run.ts) with createLedgerApp over a ledger file behind it, in Node:
// the server SIGKILLed mid-request and started again on the same file.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, it } from "vitest"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import type { LedgerEntry } from "../../src/core/index.ts"
import { bundleScripts } from "./chaos-kit.ts"
import { type ChaosServer, edgeChaos } from "./edge-chaos-run.ts"

const dir = mkdtempSync(join(tmpdir(), "mycelium-edge-chaos-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
beforeAll(() =>
  bundleScripts(
    {
      agent: fileURLToPath(new URL("./edge-worker.ts", import.meta.url)),
      server: fileURLToPath(new URL("./edge-server.ts", import.meta.url)),
    },
    dir,
  ),
)

const fileServer: ChaosServer = {
  name: "file",
  bundle: join(dir, "server.mjs"),
  args: [],
  // It boots in about 100 ms: down up to 1.2 s so 1 s leases lapse on its clock at times.
  pace: { chaosMs: 12_000, upMs: [1000, 2000], downMs: 1200, minKills: 3, minKillsInFlight: 2 },
  // Read from the file itself, with no server in between.
  async finals(stateDir) {
    const rows: LedgerEntry[] = []
    for await (const r of new FileLedgerStorage(join(stateDir, "ledger.json")).list()) rows.push(r)
    return rows
  },
}

describe("edge chaos: agents and the API server SIGKILLed, an operator answering hard-blocks over HTTP", () => {
  it(
    "file store behind the API: 0 duplicates, 0 wrong results",
    () => edgeChaos({ server: fileServer, agentBundle: join(dir, "agent.mjs"), dir }),
    90_000,
  )
})
