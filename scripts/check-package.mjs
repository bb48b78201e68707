// The package as a user gets it (`npm test` runs this): pack the tarball (prepack builds), lint it with publint
// (strict) and @arethetypeswrong/cli (ESM-only profile), check the bundle sizes, then install it into a scratch
// project with NO optional peer dependency and use it there: the bin, an ESM import of every entry, and a
// `tsc --strict` check of a consumer file with skipLibCheck off; last, vitest linked in, the conformance suites
// (storage, task, receipt and state-flush stores) run from the tarball as an adapter author runs them.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

// Entries whose types need no peer. MyceliumLedgerObject must be a real class type: if its base were `any`, the
// property access under @ts-expect-error would compile and the directive itself would be the error.
const CONSUMER = `import { ActionLedger, MemoryLedgerStorage, LedgerHardBlockError, protect } from "mycelium-runtime"
import { bounded, ToolRegistry } from "mycelium-runtime/tools"
import { HistoryGuard, type Message } from "mycelium-runtime/transcript"
import { hmacReceiptSigner, MemoryReceiptStore, ReceiptEmitter } from "mycelium-runtime/receipts"
import { MemoryTaskStore, TaskLedger } from "mycelium-runtime/tasks"
import { MemoryStateFlushStore, StateFlush } from "mycelium-runtime/state"
import { MemoryLedgerStorage as Memory2 } from "mycelium-runtime/adapters/memory"
import { FileLedgerStorage } from "mycelium-runtime/adapters/file"
import { IndexedDbLedgerStorage } from "mycelium-runtime/adapters/indexeddb"
import { DurableObjectLedgerStorage, MyceliumLedgerObject } from "mycelium-runtime/adapters/durable-object"
import { NeonLedgerStorage } from "mycelium-runtime/adapters/neon"
import { HttpLedgerStorage } from "mycelium-runtime/adapters/http"
// Plain Redis needs no client package, and neither do its types (they once named @upstash/redis's).
import { RedisLedgerStorage } from "mycelium-runtime/adapters/redis"
import { UpstashLedgerStorage, type UpstashClient } from "mycelium-runtime/adapters/upstash"
import { configureSha256 } from "mycelium-runtime/node"
import { hasAsyncContext } from "mycelium-runtime/async-context"
import { boundedNode } from "mycelium-runtime/node/paths"
import { runPlan, ScriptedModel, type RunResult, type RunEvent } from "mycelium-runtime/harness"
import { createWorkspace, CmdRunAction, workspaceTools } from "mycelium-runtime/harness/workspace"
import { RemoteLedger, type RemoteTransitionContext } from "mycelium-runtime/client"
import {
  type ReceiptStoreFixtureFactory,
  type StateFlushStoreFixtureFactory,
  type LedgerStorageFixtureFactory,
  type TaskStoreFixtureFactory,
  testLedgerStorage,
  testReceiptStore,
  testStateFlush,
  testTaskStore,
} from "mycelium-runtime/conformance"

const receipts = new ReceiptEmitter({ signer: hmacReceiptSigner("k"), store: new MemoryReceiptStore(), agentId: "a" })
const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), leaseTtl: 60, receipts })
const history: Message[] = [{ role: "user", content: "hi" }]
void [new HistoryGuard(), history, new ToolRegistry(), new TaskLedger({ storage: new MemoryTaskStore() })]
void [StateFlush, MemoryStateFlushStore]
const send = ledger.tool(
  { name: "send_payment", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
  async (args: { amount: number }, tx) => tx.sideEffect(async () => ({ id: "pi_1", amount: args.amount })),
)
const result: Promise<{ id: string; amount: number }> = send({ amount: 1 }, { toolCallId: "call_1" })
void result
const stores = [new Memory2(), new FileLedgerStorage("./ledger.json"), new IndexedDbLedgerStorage({ dbName: "x" })]
void stores
void new HttpLedgerStorage({ url: "https://ledger.example.com", token: "t" })
void NeonLedgerStorage
void new RedisLedgerStorage({ url: "redis://127.0.0.1:6379" })
declare const upstashClient: UpstashClient
void new UpstashLedgerStorage({ redis: upstashClient })
void DurableObjectLedgerStorage
declare const object: MyceliumLedgerObject
const row: ReturnType<MyceliumLedgerObject["ledgerGet"]> = object.ledgerGet("id")
void row
// @ts-expect-error the class has no such member (it would if it extended any)
object.notAMember
void [LedgerHardBlockError, protect, bounded, configureSha256, hasAsyncContext(), boundedNode]
const run: Promise<RunResult> = runPlan(
  { tasks: [{ task_id: "a", prompt: "p" }], output_task_id: "a" },
  { model: new ScriptedModel(), tools: workspaceTools(createWorkspace()) },
  { onEvent: (e: RunEvent) => void e.sequence },
)
void run
void CmdRunAction({ command: "ls" })
const remote = new RemoteLedger({ baseUrl: "https://ledger.example.com", token: "t" })
const charge = remote.tool(
  { name: "charge", binding: { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" } },
  async (args: { cents: number }, tx: RemoteTransitionContext) => tx.sideEffect(() => ({ charged: args.cents })),
)
const charged: Promise<{ charged: number }> = charge({ cents: 1 }, { toolCallId: "call_2" })
void charged
// The conformance suites' types need no vitest (only their JS imports it).
const factory: LedgerStorageFixtureFactory = () => ({ storage: new MemoryLedgerStorage(), cleanup: () => {} })
const taskFactory: TaskStoreFixtureFactory = () => ({ storage: new MemoryTaskStore(), cleanup: () => {} })
const receiptFactory: ReceiptStoreFixtureFactory = async () => ({ storage: new MemoryReceiptStore() })
const stateFactory: StateFlushStoreFixtureFactory = () => ({ storage: new MemoryStateFlushStore() })
void [testLedgerStorage, factory, testTaskStore, taskFactory, testReceiptStore, receiptFactory]
void [testStateFlush, stateFactory]
`

// The adapter author's test file: the storage conformance suite against the tarball's memory store, and against one
// without the optional dispatch index (as a third-party store might be), whose capability cases must skip, not pass;
// then the task, receipt and state-flush store suites against the tarball's memory stores.
const CONFORMANCE = `import { type LedgerStorage, MemoryLedgerStorage } from "mycelium-runtime"
import { testLedgerStorage, testReceiptStore, testStateFlush, testTaskStore } from "mycelium-runtime/conformance"
import { MemoryReceiptStore } from "mycelium-runtime/receipts"
import { MemoryStateFlushStore } from "mycelium-runtime/state"
import { MemoryTaskStore } from "mycelium-runtime/tasks"

testLedgerStorage("memory", () => ({ storage: new MemoryLedgerStorage() }))
testLedgerStorage("no dispatch index", () => {
  const m = new MemoryLedgerStorage()
  const storage: LedgerStorage = {
    get: (id) => m.get(id),
    set: (e) => m.set(e),
    list: (o) => m.list(o),
    tryClaimInflight: async (e, ttl, now, o) => {
      const r = await m.tryClaimInflight(e, ttl, now, o)
      return r.outcome === "claimed" ? { outcome: r.outcome, entry: r.entry } : r
    },
    tryTransition: (next, expect) => m.tryTransition(next, expect),
  }
  return { storage }
})
testTaskStore("memory", () => ({ storage: new MemoryTaskStore() }))
testReceiptStore("memory", () => ({ storage: new MemoryReceiptStore() }))
testStateFlush("memory", () => ({ storage: new MemoryStateFlushStore() }))
`
// Each store suite's cases, all of which must pass against the memory store (the describe title the suite gives
// "memory"). A case added to or dropped from a suite changes its count here.
const STORE_SUITES = [
  ["testTaskStore", "TaskStore conformance: memory", 14],
  ["testReceiptStore", "ReceiptStore conformance: memory", 9],
  ["testStateFlush", "StateFlush on memory", 5],
]

const root = resolve(".")
const pkg = JSON.parse(readFileSync("package.json", "utf8"))
const scratch = mkdtempSync(join(tmpdir(), "mycelium-consumer-"))
let failures = 0

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...options })
  return {
    code: r.status ?? 1,
    out: `${r.stdout ?? ""}${r.stderr ?? ""}`,
    stdout: r.stdout ?? "",
    stderr: r.stderr ?? "",
  }
}
function check(name, ok, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}`)
  if (!ok) {
    failures++
    if (detail) console.log(detail.replace(/^/gm, "     "))
  }
}
const step = (name, r) => check(name, r.code === 0, r.out)

try {
  // 1. Pack (prepack runs the build).
  const packed = run("npm", ["pack", "--json", "--pack-destination", scratch])
  if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.out}`)
  const info = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m)))[0]
  const tarball = join(scratch, info.filename)
  const files = info.files.map((f) => f.path)
  console.log(
    `package: ${files.length} files, ${(info.size / 1024).toFixed(1)} KB packed, ${(info.unpackedSize / 1024).toFixed(1)} KB unpacked`,
  )
  const stray = files.filter(
    (f) => !/^(dist\/.*\.(js|d\.ts)|README\.md|LICENSE|package\.json|.*\.schema\.json)$/.test(f),
  )
  check(
    "tarball holds only dist JS/.d.ts, README, LICENSE, package.json, schemas",
    stray.length === 0,
    stray.join("\n"),
  )
  const unwanted = files.filter((f) => /\.map$|^dist\/edge\/worker\.|^dist\/cli\/.*\.d\.ts$/.test(f))
  check("no source maps, no worker entry, no CLI declarations", unwanted.length === 0, unwanted.join("\n"))
  check("README and LICENSE are in the tarball", files.includes("README.md") && files.includes("LICENSE"))

  // 2. Lint the tarball.
  step("publint --strict", run("npx", ["publint", "--strict", tarball]))
  step(
    "attw --profile esm-only",
    run("npx", ["attw", tarball, "--profile", "esm-only", "--format", "table-flipped"]),
  )

  // 3. Sizes (dist is fresh from prepack).
  const size = run(process.execPath, ["scripts/size.mjs", "--no-build"])
  console.log(size.out.trimEnd())
  check("sizes within budget", size.code === 0)

  // 4. A consumer project with no optional peers.
  const app = join(scratch, "app")
  mkdirSync(app)
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  )
  step(
    "npm install <tarball> (no optional peers)",
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], { cwd: app }),
  )
  const peers = Object.keys(pkg.peerDependencies ?? {})
  const installedPeers = peers.filter((p) => existsSync(join(app, "node_modules", p)))
  check("no optional peer got installed", installedPeers.length === 0, installedPeers.join(", "))
  const bin = join(app, "node_modules", ".bin", "mycelium")

  const help = run(bin, ["--help"], { cwd: app })
  check("mycelium --help", help.code === 0 && help.stdout.includes("commands:"), help.out)
  const demo = run(bin, ["demo"], { cwd: app })
  check(
    "mycelium demo (twice without the ledger, once with it, a hard block, one re-run after release)",
    demo.code === 0 &&
      demo.stdout.includes("unguarded executions: 2") &&
      demo.stdout.includes("guarded executions: 1") &&
      demo.stdout.includes("re-runs after release: 1"),
    demo.out,
  )
  // The demo's hint names the command that works where it ran: here the installed bin.
  const hint = /inspect: (.+?) transitions list --file (\S+?)\)/.exec(demo.stdout)
  const listed = hint ? run(bin, ["transitions", "list", "--file", hint[2]], { cwd: app }) : null
  check(
    "the demo's inspect hint is `npx mycelium ...`, and it lists the demo's rows",
    hint?.[1] === "npx mycelium" && listed?.code === 0 && listed.stdout.includes("send_payment"),
    `${hint?.[0]}\n${listed?.out}`,
  )
  const serve = run(bin, ["serve", "--port", "0"], { cwd: app })
  const line = serve.stderr.trim()
  check(
    "mycelium serve without hono/zod/jose: exit 2, one line naming the package, no stack",
    serve.code === 2 && !line.includes("\n") && /needs the optional package '(hono|zod|jose)'/.test(line),
    `exit ${serve.code}\n${serve.out}`,
  )

  // Every entry is imported; those that need no peer must load, the others may fail only on a missing peer.
  const entries = Object.keys(pkg.exports).filter((k) => !k.endsWith(".json"))
  const mustLoad = [".", "./adapters/memory", "./adapters/file", "./adapters/http", "./adapters/upstash"]
  mustLoad.push("./tools", "./transcript", "./receipts", "./tasks", "./state")
  mustLoad.push("./adapters/neon", "./node", "./node/paths", "./async-context")
  // The integrations import their framework for types only: they load before (and without) it.
  mustLoad.push("./integrations/ai-sdk", "./integrations/langgraph", "./integrations/openai-agents")
  writeFileSync(
    join(app, "imports.mjs"),
    `const results = {}
for (const entry of ${JSON.stringify(entries)}) {
  const spec = entry === "." ? "mycelium-runtime" : "mycelium-runtime" + entry.slice(1)
  try { results[entry] = { ok: true, exports: Object.keys(await import(spec)).length } }
  catch (e) { results[entry] = { ok: false, code: e.code, message: e.message.split("\\n")[0] } }
}
console.log(JSON.stringify(results))`,
  )
  const imported = run(process.execPath, ["imports.mjs"], { cwd: app })
  const results = imported.code === 0 ? JSON.parse(imported.stdout) : {}
  for (const entry of entries) {
    const r = results[entry] ?? { ok: false, message: imported.out }
    if (mustLoad.includes(entry)) {
      check(`import "${entry}" loads with no peers`, r.ok && r.exports > 0, r.message)
    } else if (!r.ok) {
      const named = [...peers, "cloudflare:"].some(
        (p) => r.message?.includes(`'${p}`) || r.message?.includes(`"${p}`),
      )
      check(`import "${entry}" fails only for a missing peer`, named, `${r.code}: ${r.message}`)
    } else {
      check(`import "${entry}" loads`, true)
    }
  }

  // The types as a strict consumer sees them, every library checked (skipLibCheck: false).
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        lib: ["ES2022", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        types: [],
      },
      files: ["consumer.ts"],
    }),
  )
  writeFileSync(join(app, "consumer.ts"), CONSUMER)
  step(
    "tsc --strict (skipLibCheck: false) of a consumer file",
    run(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "."], { cwd: app }),
  )

  // An adapter author's run of the storage conformance suite from the tarball: vitest (the optional peer the
  // entry needs) linked in from this repository rather than installed, so the check costs no download.
  symlinkSync(join(root, "node_modules", "vitest"), join(app, "node_modules", "vitest"), "dir")
  writeFileSync(join(app, "conformance.test.ts"), CONFORMANCE)
  const report = join(app, "conformance.json")
  const conf = run(
    process.execPath,
    [join(app, "node_modules", "vitest", "vitest.mjs"), "run", "--reporter=json", `--outputFile=${report}`],
    { cwd: app, env: { ...process.env, NO_COLOR: "1" } },
  )
  const cases = existsSync(report)
    ? JSON.parse(readFileSync(report, "utf8")).testResults.flatMap((f) => f.assertionResults)
    : []
  // Cases by the suite's top describe title, exactly (every suite's title ends in the store's name).
  const of = (title, status) =>
    cases.filter((c) => c.ancestorTitles[0] === title && (!status || c.status === status)).length
  const memory = "LedgerStorage conformance: memory"
  const bare = "LedgerStorage conformance: no dispatch index"
  check(
    'testLedgerStorage from "mycelium-runtime/conformance" under vitest: every case passes for the memory store, ' +
      "the three dispatch-id cases skip for a store without a dispatch index",
    conf.code === 0 &&
      of(memory) > 40 &&
      of(memory, "passed") === of(memory) &&
      of(bare, "skipped") === 3 &&
      of(bare, "passed") === of(memory) - 3,
    `${conf.out}\nmemory: ${of(memory, "passed")}/${of(memory)} passed; no dispatch index: ` +
      `${of(bare, "passed")} passed, ${of(bare, "skipped")} skipped`,
  )
  for (const [suite, title, count] of STORE_SUITES)
    check(
      `${suite} from "mycelium-runtime/conformance" under vitest: all ${count} cases pass for the memory store`,
      conf.code === 0 && of(title) === count && of(title, "passed") === count,
      `${conf.code === 0 ? "" : conf.out}\n${title}: ${of(title, "passed")}/${of(title)} passed, ${count} expected`,
    )
} catch (e) {
  check("package check", false, e instanceof Error ? e.message : String(e))
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
if (failures) {
  console.error(`\npackage check: ${failures} failed`)
  process.exit(1)
}
