// Chaos through the edge HTTP API (edge-chaos-run.ts) with the production Cloudflare worker behind it: the bundle
// `wrangler deploy` would upload, run by workerd with its SQLite Durable Object state persisted on disk. workerd is
// SIGKILLed mid-request (its whole process group) and started again on the same state: a write it acknowledged and
// lost would show as a second effect, a wrong result or a row gone.
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, it } from "vitest"
import { bundleScripts } from "./chaos-kit.ts"
import { type ChaosServer, edgeChaos } from "./edge-chaos-run.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "mycelium-workerd-chaos-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
beforeAll(async () => {
  // wrangler's own build of wrangler.toml's `main`, as deployed (minified), not a bundle of our making.
  execFileSync(
    join(root, "node_modules/.bin/wrangler"),
    ["deploy", "--dry-run", "--outdir", join(dir, "worker")],
    { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, stdio: "ignore" },
  )
  await bundleScripts(
    {
      agent: fileURLToPath(new URL("./edge-worker.ts", import.meta.url)),
      server: fileURLToPath(new URL("./edge-workerd.ts", import.meta.url)),
    },
    dir,
    ["miniflare"],
  )
}, 60_000)

const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(
  readFileSync(join(root, "wrangler.toml"), "utf8"),
)?.[1]

const workerd: ChaosServer = {
  name: "workerd",
  bundle: join(dir, "server.mjs"),
  args: [join(dir, "worker", "worker.js"), compatibilityDate ?? "missing from wrangler.toml"],
  // Only the worker reads its Durable Objects: served once more on the state the last kill left.
  finals: (_stateDir, serveAgain) => serveAgain(),
  // A restart takes about 1 s (Node, Miniflare, workerd, the bundle), down already long enough for 1 s leases to
  // lapse: kills come sooner after each boot and the run is longer, for 6 or more of them.
  pace: { chaosMs: 20_000, upMs: [500, 1500], downMs: 600, minKills: 5, minKillsInFlight: 4 },
}

describe("edge chaos on workerd: agents and the worker SIGKILLed, its Durable Objects restarted from disk", () => {
  it(
    "SQLite Durable Objects behind the API: 0 duplicates, 0 wrong results",
    () => edgeChaos({ server: workerd, agentBundle: join(dir, "agent.mjs"), dir }),
    110_000,
  )
})
