// One ledger, two implementations: this package and the real Python original take turns on the same store (the
// original's file layout, and its Redis keys and Postgres tables when REDIS_URL / DATABASE_URL are set) and must agree
// on every call (run it with `npm run interop:python`). First, without a store, both key random calls and tasks, judge
// random stored rows and sign random receipts (INTEROP_KEY_SEED repeats a run, INTEROP_KEY_CASES sizes it).
// The original's source is not part of this repository (nor installable here: no PyPI), so this is a script, not a
// test: MYCELIUM_PY_SRC must name the folder that holds its `mycelium` package (`sdk/` in its repository), and
// python3 needs pydantic 2 and PyYAML, plus redis-py and psycopg 3 for those stores (docs/python-differences.md).
// Exit code: 0 when every check holds, 1 when one fails, 2 when it cannot run.
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { FileReceiptStore } from "../src/adapters/file-receipts.ts"
import { ActionLedger, type SideEffectClass } from "../src/core/index.ts"
import { hmacReceiptSigner, ReceiptEmitter, verifyReceipts } from "../src/core/receipts/index.ts"
import { TaskLedger } from "../src/core/tasks/task-ledger.ts"
import { configChecks, same } from "./python-interop-config.ts"
import { gateChecks } from "./python-interop-gates.ts"
import { keyChecks, keySeed } from "./python-interop-keys.ts"
import { type Call, operatorChecks } from "./python-interop-operators.ts"
import { raceChecks } from "./python-interop-races.ts"
import { receiptChecks } from "./python-interop-receipts.ts"
import {
  fileStore,
  ledgerOf,
  type Outcome,
  outcomeOf,
  postgresStore,
  pythonEnv,
  redisStore,
  type SharedStore,
  taskStoreOf,
} from "./python-interop-stores.ts"

const pause = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve())

// A child run of this script: one call through this package, optionally killed inside its side effect.
if (process.argv[2] === "--ts-call") {
  const [spec, cls, callId, amount, crash] = process.argv.slice(3) as [
    string,
    SideEffectClass,
    string,
    string,
    string?,
  ]
  let executed = 0
  const storage = ledgerOf(JSON.parse(spec) as Record<string, string>)
  const ledger = new ActionLedger({ storage, leaseTtl: 1 })
  const pay = ledger.tool(
    { name: "send_payment", binding: { agentId: "interop", policyVersion: "1", sideEffectClass: cls } },
    async (args: { amount: number; recipient: string }, tx) => {
      executed++
      return tx.sideEffect(async () => {
        if (crash === "crash") process.exit(9)
        // A slow effect (the race checks), so the other side's call finds it in flight and must wait for it.
        await pause(Number(process.env.INTEROP_BODY_MS ?? 0))
        return { paid: args.amount, by: "typescript" }
      })
    },
  )
  const out: Outcome = { executed: 0, result: null, error: null, message: null }
  // The race checks start both sides' calls at one instant, after both processes are up, and connected: a store
  // reached over a WebSocket connects on its first query, which made this side the late one on a loaded machine.
  await storage.get("interop-warm-up")
  await pause(Number(process.env.INTEROP_START_AT ?? 0) - Date.now())
  try {
    out.result = await pay({ amount: Number(amount), recipient: "acct_1" }, { toolCallId: callId })
  } catch (e) {
    out.error = (e as Error).name
    out.message = (e as Error).message
  }
  out.executed = executed
  await storage.close?.()
  console.log(JSON.stringify(out))
  process.exit(0)
}

// A child run of this script: one task run through this package's task ledger (INTEROP_WAIT=1: wait for a task in
// flight elsewhere instead of failing).
if (process.argv[2] === "--ts-task") {
  const [spec, taskId, mode] = process.argv.slice(3) as [string, string, string?]
  let executed = 0
  const { store, close } = taskStoreOf(JSON.parse(spec) as Record<string, string>)
  const tasks = new TaskLedger({ storage: store, pollInterval: 0.05, pollTimeout: 10 })
  const report = tasks.task(
    { name: "nightly_report", wait: process.env.INTEROP_WAIT === "1" },
    async (args: { region: string }) => {
      executed++
      await pause(Number(process.env.INTEROP_BODY_MS ?? 0))
      if (mode === "fail") throw new Error("task failed on purpose")
      return { region: args.region, by: "typescript" }
    },
  )
  const out: Outcome = { executed: 0, result: null, error: null, message: null }
  await store.get("interop-warm-up")
  await pause(Number(process.env.INTEROP_START_AT ?? 0) - Date.now())
  try {
    out.result = await report({ region: "eu" }, { taskId })
  } catch (e) {
    out.error = (e as Error).name
    out.message = (e as Error).message
  }
  out.executed = executed
  await close()
  console.log(JSON.stringify(out))
  process.exit(0)
}

const src = process.env.MYCELIUM_PY_SRC
if (!src || !existsSync(join(src, "mycelium", "action_ledger.py"))) {
  console.error(
    "python-interop: set MYCELIUM_PY_SRC to the folder that holds the original's `mycelium` package",
  )
  process.exit(2)
}
const here = fileURLToPath(import.meta.url)
const dir = mkdtempSync(join(tmpdir(), "mycelium-interop-"))
const run = `${process.pid}_${Date.now().toString(36)}`

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// The original's own emitter and verifier on its FileAuditReceiptStorage.
const PY_RECEIPTS = `
import sys
from mycelium.audit_receipt import AuditReceiptEmitter, FileAuditReceiptStorage, verify_receipt
path, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
storage = FileAuditReceiptStorage(path)
if mode == "emit":
    AuditReceiptEmitter(agent_id="interop", signing_key=key, storage=storage)._emit(
        action="send_payment", action_kind="tool", request_id="py-receipt",
        inputs={"args": [], "kwargs": {"amount": 100.0, "big": 2**60, "neg": -0.0}},
        outputs={"paid": 100.0, "fee": 0.0, "big": 2**60}, status="completed", error=None)
else:
    print(*[verify_receipt(r, key) for r in storage.list_all()])
`

let failed = 0
const check = (name: string, ok: boolean, detail: unknown) => {
  if (!ok) failed++
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: ${JSON.stringify(detail)}`}`)
}

/** One call of `send_payment` through the original on a shared store (`crash`: killed inside its side effect). */
function pyCall(
  spec: string,
  cls: string,
  callId: string,
  amount: number,
  mode: "" | "crash" | "float" = "",
) {
  const args = [join(dirname(here), "python", "original-interop.py"), spec, cls, callId, String(amount)]
  const r = spawnSync("python3", mode ? [...args, mode] : args, {
    encoding: "utf8",
    env: pythonEnv(src as string),
  })
  return mode === "crash" ? null : outcomeOf(r.stdout, r.stderr, "python")
}
/** The same call through this package, in a child process of this script. */
function tsCall(spec: string, cls: string, callId: string, amount: number, crash = false) {
  const args = ["--import", "tsx", here, "--ts-call", spec, cls, callId, String(amount)]
  const r = spawnSync(process.execPath, crash ? [...args, "crash"] : args, { encoding: "utf8" })
  return crash ? null : outcomeOf(r.stdout, r.stderr, "typescript")
}
const callOn =
  (store: SharedStore): Call =>
  (side, cls, callId, amount, crash = false) =>
    side === "python"
      ? pyCall(JSON.stringify(store.spec), cls, callId, amount, crash ? "crash" : "")
      : tsCall(JSON.stringify(store.spec), cls, callId, amount, crash)

/** Calls through both implementations on one shared action ledger, each replaying or refusing the other's. */
async function ledgerChecks(store: SharedStore): Promise<void> {
  const spec = JSON.stringify(store.spec)
  const py = (cls: string, callId: string, amount: number, mode: "" | "crash" | "float" = "") =>
    pyCall(spec, cls, callId, amount, mode)
  const ts = (cls: string, callId: string, amount: number, crash = false) =>
    tsCall(spec, cls, callId, amount, crash)
  // A completed call is replayed by the other side: the stored result comes back and the body does not run.
  const a = ts("keyed_mutate", "call_ts", 100)
  const b = py("keyed_mutate", "call_ts", 100)
  check("typescript pays once", a?.executed === 1 && a.error === null, a)
  check(
    "python replays the typescript call without running it",
    b?.executed === 0 && same(b.result, a?.result),
    b,
  )
  const c = py("keyed_mutate", "call_py", 250)
  const d = ts("keyed_mutate", "call_py", 250)
  check("python pays once", c?.executed === 1 && c.error === null, c)
  check(
    "typescript replays the python call without running it",
    d?.executed === 0 && same(d.result, c?.result),
    d,
  )
  // The same tool-call id with other arguments is an identity conflict on both sides.
  const e = py("keyed_mutate", "call_ts", 999)
  const f = ts("keyed_mutate", "call_py", 999)
  check("python refuses drifted arguments on a typescript row", e?.executed === 0 && e.error !== null, e)
  check("typescript refuses drifted arguments on a python row", f?.executed === 0 && f.error !== null, f)
  // A worker killed inside its side effect leaves an ambiguous row; after its lease lapses, a redispatch by the
  // other implementation must hard-block, never pay again.
  ts("non_idempotent_mutate", "call_ts_crash", 5, true)
  py("non_idempotent_mutate", "call_py_crash", 6, "crash")
  await sleep(1_500)
  const g = py("non_idempotent_mutate", "call_ts_crash", 5)
  const h = ts("non_idempotent_mutate", "call_py_crash", 6)
  check(
    "python hard-blocks a typescript worker killed mid-effect",
    g?.executed === 0 && g.error === "LedgerHardBlockError",
    g,
  )
  check(
    "typescript hard-blocks a python worker killed mid-effect",
    h?.executed === 0 && h.error === "LedgerHardBlockError",
    h,
  )
  // The original re-derives a row's args fingerprint from its stored kwargs: if this package's rewrite of the file
  // turned its `100.0` into `100`, the original's own redispatch would be refused as other arguments.
  const i = py("keyed_mutate", "call_py_float", 100, "float")
  ts("keyed_mutate", "call_ts_after_float", 7)
  const j = py("keyed_mutate", "call_py_float", 100, "float")
  check(
    "python replays its 100.0 call after typescript rewrote the file",
    i?.executed === 1 && j?.executed === 0 && j.error === null,
    { i, j },
  )
  const rows = ledgerOf(store.spec)
  let n = 0
  for await (const r of rows.list()) {
    n++
    console.log(
      `     row ${r.requestId.slice(0, 40)} ${r.tool} ${r.terminalOutcome} ${r.owner?.slice(0, 30)}`,
    )
  }
  // Six calls paid or blocked, plus the row this package leaves when it gives up a drifted claim (the original
  // refuses before claiming: docs/python-differences.md).
  await rows.close?.()
  check(`one ${store.kind} ledger, seven rows, read by both`, n === 7, n)
}

/** The stores to share: the file always; Redis and Postgres when their servers are configured. */
function sharedStores(): SharedStore[] {
  const stores = [fileStore(dir, "shared")]
  if (process.env.REDIS_URL) stores.push(redisStore(process.env.REDIS_URL, run))
  else console.log("skip Redis: REDIS_URL is not set (bash scripts/services.sh start; eval its env)")
  if (process.env.DATABASE_URL) stores.push(postgresStore(process.env.DATABASE_URL, run))
  else console.log("skip Postgres: DATABASE_URL is not set")
  return stores
}

const stores = sharedStores()
try {
  console.log("# keys, gates and receipts of random calls and rows")
  const seed = keySeed()
  await keyChecks(src, seed, check)
  await gateChecks(src, seed, check)
  await receiptChecks(src, dir, seed, check)
  for (const store of stores) {
    console.log(`# ${store.kind}`)
    const unready = (await store.prepare?.(src)) ?? null
    if (unready) {
      check(`${store.kind}: the original and this package set up the tables`, false, unready)
      continue
    }
    await ledgerChecks(store)
    await operatorChecks(src, store, callOn(store), check)
    await raceChecks(src, store, here, check)
    // One mycelium.yaml loaded by both: configured tools and tasks on this store, receipts and state flush on
    // shared files (the original keeps those in files or memory only).
    await configChecks(src, join(dir, store.kind), store, check)
  }

  console.log("# receipts")
  // Receipts: one JSONL file, signed by both. The original signs floats as floats (`100.0`) and ints exactly,
  // which JSON.parse alone would lose; each must verify the other's.
  const receipts = join(dir, "receipts.jsonl")
  const key = "interop-receipt-key"
  const pyReceipts = (mode: "emit" | "verify") =>
    spawnSync("python3", ["-c", PY_RECEIPTS, receipts, key, mode], {
      encoding: "utf8",
      env: pythonEnv(src),
    })
  const emitted = pyReceipts("emit")
  const store = new FileReceiptStore(receipts)
  await new ReceiptEmitter({ signer: hmacReceiptSigner(key), store, agentId: "interop" }).emit({
    action: "send_payment",
    actionKind: "tool",
    requestId: "ts-receipt",
    kwargs: { amount: 100, big: 2 ** 60, neg: -0 },
    outputs: { paid: 100.5, big: 2 ** 60 },
    status: "completed",
  })
  const listed = await store.list()
  const verdict = await verifyReceipts(listed, { hmac: key })
  check(
    "typescript verifies the original's receipt with 100.0 and 2**60, and its own",
    emitted.status === 0 && verdict.ok && verdict.valid === 2,
    { stderr: emitted.stderr, verdict },
  )
  const verified = pyReceipts("verify")
  check(
    "the original verifies both receipts with its own verify_receipt",
    verified.status === 0 && verified.stdout.trim() === "True True",
    { stdout: verified.stdout, stderr: verified.stderr },
  )
} finally {
  for (const store of stores) await store.close().catch((e) => console.log(`cleanup: ${e}`))
  rmSync(dir, { recursive: true, force: true })
}
console.log(failed === 0 ? "python-interop: every check holds" : `python-interop: ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
