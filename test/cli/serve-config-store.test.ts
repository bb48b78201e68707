// `mycelium serve` beside a config: without --ledger it serves the file the config ledgers its tools in, as the
// `transitions` commands read it. It served the default .mycelium/ledger.json instead, so an operator looking for a
// stuck call saw another ledger's rows and settled releases there, while the config's row stayed stuck.
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, expect, it } from "vitest"
import { newEntry } from "../../src/adapter-kit.ts"
import { FileLedgerStorage } from "../../src/adapters/file.ts"
import { serveOnFreePort } from "./cli-bin.ts"
import { cliRunner } from "./run-cli.ts"

const cwd = mkdtempSync(join(tmpdir(), "mycelium-serve-config-"))
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) c.kill("SIGKILL")
  rmSync(cwd, { recursive: true, force: true })
})
const run = cliRunner(cwd, { timeout: 20_000 })

const config = (store: string) => `transition:
  agent_id: a
  policy_version: "1"
action_ledger:
${store}
  tools: [pay]
tools:
  pay:
    side_effect_class: non_idempotent_mutate
`

it("serves the config's ledger file when --ledger is not given", async () => {
  writeFileSync(join(cwd, "files.yaml"), config("  storage: file\n  path: prod-ledger.json"))
  const now = Date.now() / 1000
  await new FileLedgerStorage(join(cwd, "prod-ledger.json")).set({
    ...newEntry(
      { requestId: "pay:prod", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 10 },
      now - 50,
    ),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
  const port = await serveOnFreePort(children, ["-c", "files.yaml"], { cwd })
  const r = await fetch(`http://127.0.0.1:${port}/v1/transitions`)
  const body = (await r.json()) as { transitions?: { request_id: string }[] }
  expect(r.status).toBe(200)
  expect(JSON.stringify(body)).toContain("pay:prod")
}, 40_000)

it("refuses (exit 2) a config that ledgers its tools on a store other than a file, naming --ledger", async () => {
  writeFileSync(
    join(cwd, "redis.yaml"),
    config("  storage: redis\n  url: redis://127.0.0.1:1/0\n  prefix: 'prod:'"),
  )
  const r = run(["serve", "--port", "0", "-c", "redis.yaml"])
  expect(r.code).toBe(2)
  expect(r.err).toContain("serve serves a ledger file")
  expect(r.err).toContain("--ledger PATH")
}, 40_000)

it("takes the config's python_lock: a release waits for the flock a Python worker holds on <path>.lock", async () => {
  writeFileSync(
    join(cwd, "py.yaml"),
    config("  storage: file\n  path: py-ledger.json\n  python_lock: true").replace(
      'policy_version: "1"',
      'policy_version: "1"\n  reclaim_requires_death_signal: false',
    ),
  )
  const now = Date.now() / 1000
  await new FileLedgerStorage(join(cwd, "py-ledger.json")).set({
    ...newEntry({ requestId: "pay:py", tool: "pay", owner: "w1", fence: 1, leaseUntil: now - 10 }, now - 50),
    terminalOutcome: "UNKNOWN",
    sideEffectBoundary: "maybe_crossed",
  })
  const port = await serveOnFreePort(children, ["-c", "py.yaml"], { cwd })
  // A Python worker mid-write: it holds the flock, read the file, and writes it back when it lets go. A release
  // written meanwhile without the flock is undone by that write.
  // It lets go when the test says, not after a fixed time a loaded machine could spend handing the release over.
  const holder = spawn("flock", ["-o", join(cwd, "py-ledger.json.lock"), "sh", "-c", "echo held; read go"])
  children.push(holder)
  await new Promise<void>((r) => holder.stdout.once("data", () => r()))
  let letGo = false
  const answered = fetch(`http://127.0.0.1:${port}/v1/transitions/pay:py/release`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ verified: "completed", reason: "charge found", result: { id: "pi_1" } }),
  }).then((r) => ({ r, beforeLetGo: !letGo }))
  // Time for a release that ignores the flock to answer; one that waits for it cannot answer before the holder goes.
  await new Promise((r) => setTimeout(r, 500))
  letGo = true
  holder.stdin.end("go\n")
  const { r, beforeLetGo } = await answered
  expect(r.status, await r.text()).toBe(200)
  expect(beforeLetGo).toBe(false)
}, 40_000)

it("names --ledger, the flag serve has, for a config that ledgers tools on two stores", () => {
  writeFileSync(
    join(cwd, "two.yaml"),
    `${config("  storage: file\n  path: a.json")}  refund:\n    side_effect_class: non_idempotent_mutate\n    ledger:\n      storage: file\n      path: b.json\n`,
  )
  const r = run(["serve", "--port", "0", "-c", "two.yaml"])
  expect(r.code).toBe(2)
  expect(r.err).toContain("2 different stores")
  expect(r.err).toContain("--ledger PATH")
  expect(r.err).not.toContain("--redis-url")
}, 40_000)
