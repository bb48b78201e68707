// `mycelium demo`: the duplicate-payment bug and the fix; --serve then serves the demo's ledger file.
import { mkdirSync, readFileSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import type { ReceiptStore } from "../../core/receipts/store.ts"
import { lockDemoDir } from "../demo-lock.ts"
import { DEMO_AGENT, runDemo } from "../demo-scenario.ts"
import { UsageError } from "../errors.ts"
import { openLedger } from "../ledger-access.ts"
import { parseOrUsage, parsePort, requireRegularFile, serveToken } from "../options.ts"
import { CLI, dim } from "../style.ts"

// Under .mycelium/, which .gitignore and biome ignore: the demo must never leave a file that lint or git sees.
export const DEMO_LEDGER = ".mycelium/demo-ledger.json"

export const HELP = `mycelium demo [--store file|memory|config] [-c PATH] [--ledger PATH] [--serve [--port N] [--token T]]

  the duplicate-tool-call bug (langgraph#7417) and the fix, in one process:
    --store file     (default) a fresh ledger file, ${DEMO_LEDGER} (or --ledger PATH)
    --store memory   nothing written to disk
    --store config   the action_ledger store of mycelium.yaml (or -c PATH): Redis, Postgres, ... (rows are kept)
  --serve            afterwards, serve the demo's ledger file over HTTP on loopback (Ctrl-C stops it);
                     --token T (or MYCELIUM_TOKEN) requires 'Authorization: Bearer T' on every /v1 request
exit codes: 0 every check passed, 1 a check failed, 2 usage or config error`

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("demo", {
    args,
    allowPositionals: true,
    options: {
      store: { type: "string", default: "file" },
      config: { type: "string", short: "c" },
      serve: { type: "boolean", default: false },
      port: { type: "string" },
      ledger: { type: "string" },
      token: { type: "string" },
    },
  })
  if (positionals.length) throw new UsageError(`demo takes no arguments, got '${positionals[0]}'`)
  const port = parsePort(values.port)
  const store = values.store
  if (store !== "file" && store !== "memory" && store !== "config")
    throw new UsageError(`demo: --store must be file, memory or config, got '${store}'`)
  if (values.serve && store !== "file")
    throw new UsageError("demo: --serve serves the demo's ledger file (--store file)")
  // Before anything runs: a blank token found only at --serve time would leave a demo ledger written for nothing.
  const token = values.serve ? serveToken("demo --serve", values.token) : undefined
  const ledgerPath = values.ledger ?? DEMO_LEDGER
  if (store === "file") {
    // A directory here would fail rmSync with a raw EISDIR: a usage error instead, before anything is removed.
    requireRegularFile(ledgerPath, "demo: --ledger")
    requireRegularFile(join(dirname(ledgerPath), "demo-receipts.jsonl"), "demo: the receipt file")
    mkdirSync(dirname(ledgerPath), { recursive: true })
    lockDemoDir(dirname(ledgerPath))
    requireDemoLedger(ledgerPath)
  }
  // The packages and the port too: a second `npm start`, or one without hono, stops before it rewrites a file.
  const api = values.serve
    ? await (await import("./serve.ts")).bindApi("demo --serve", port, token)
    : undefined
  let outcome: Awaited<ReturnType<typeof runOn>>
  try {
    outcome = await runOn(store, ledgerPath, values.config)
  } catch (e) {
    api?.close() // or the bound port keeps the process alive after the error
    throw e
  }
  const { report, receipts } = outcome
  const ok =
    report.unguardedExecutions === 2 &&
    report.guardedExecutions === 1 &&
    report.pollerWaited &&
    report.hardBlocked &&
    report.rerunsAfterRelease === 1 &&
    report.receipts > 0 &&
    report.receiptsVerified === report.receipts
  if (receipts) {
    console.log(dim(`receipts: ${receipts.path}, signed with a demo key of this run`))
    console.log(
      dim(`  (verify: MYCELIUM_SIGNING_KEY=${receipts.key} ${CLI} receipts verify ${receipts.path})`),
    )
  }
  api?.open(ledgerPath, receipts)
  return ok ? 0 : 1
}

async function runOn(store: "file" | "memory" | "config", ledgerPath: string, config: string | undefined) {
  if (store === "memory") {
    const { MemoryLedgerStorage } = await import("../../core/ledger/index.ts")
    const report = await runDemo({ storage: new MemoryLedgerStorage(), where: "memory (this process only)" })
    return { report, receipts: undefined }
  }
  // With a ledger file the receipts go to a file too, so `receipts verify` and the served API can show them.
  let receipts: DemoReceipts | undefined
  if (store === "file") {
    rmSync(ledgerPath, { force: true })
    receipts = await demoReceipts(join(dirname(ledgerPath), "demo-receipts.jsonl"))
  }
  const access = await openLedger(
    store === "file" ? { file: ledgerPath } : { config: config ?? "mycelium.yaml" },
  )
  try {
    const report = await runDemo({
      storage: access.ledger.storage,
      where: access.where,
      ...(receipts && { receipts }),
    })
    return { report, receipts }
  } finally {
    await access.close()
  }
}

/**
 * The demo rewrites its ledger file: only one that holds nothing but the demo's own rows. `--ledger` pointed at a
 * real ledger would erase an UNKNOWN payment, which its redispatch would then run again.
 */
function requireDemoLedger(path: string): void {
  let rows: unknown
  try {
    rows = JSON.parse(readFileSync(path, "utf8"))
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return
  }
  const demoRow = (r: unknown): boolean => {
    const row = r as { tool?: unknown; kwargs?: { tool_call_id?: unknown } } | null
    const id = String(row?.kwargs?.tool_call_id)
    return (
      (row?.tool === "subagent_task" && id.startsWith("call_subagent_")) ||
      (row?.tool === "send_payment" && id.startsWith("call_pay_"))
    )
  }
  if (!rows || typeof rows !== "object" || Array.isArray(rows) || !Object.values(rows).every(demoRow))
    throw new UsageError(
      `demo: ${path} is not a demo ledger (it holds rows the demo did not write, or no ledger at all), and the demo would erase it: pass --ledger a new path, e.g. ${DEMO_LEDGER}`,
    )
}

interface DemoReceipts {
  readonly path: string
  readonly store: ReceiptStore
  readonly agentId: string
  /** A key of this run's own: the demo's receipts are for looking at, not for trusting. */
  readonly key: string
}

async function demoReceipts(path: string): Promise<DemoReceipts> {
  rmSync(path, { force: true })
  rmSync(`${path}.chain.jsonl`, { force: true })
  const { FileReceiptStore } = await import("../../adapters/file-receipts.ts")
  return {
    path,
    store: new FileReceiptStore(path),
    agentId: DEMO_AGENT,
    key: `demo-${globalThis.crypto.randomUUID().slice(0, 8)}`,
  }
}
