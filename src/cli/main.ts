#!/usr/bin/env node
// `mycelium`: the command line (Node, Deno, Bun).
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../adapters/file.ts"
import { ActionLedger } from "../core/index.ts"
import { createLedgerApp } from "../edge/app.ts"
import { runDemo } from "./demo.ts"
import { serve } from "./serve.ts"

const HELP = `mycelium <command>

commands:
  demo [--serve] [--port N] [--ledger PATH]   the duplicate-payment bug and the fix; --serve then keeps the
                                               local ledger API running on the demo's ledger file
  serve [--port N] [--ledger PATH]            the ledger HTTP API over a local ledger file
  transitions [--stuck] [--ledger PATH]       list transitions (stuck: need a human or a reconciler)
  release ID --verified completed|not_executed --reason TEXT --by WHO [--override-death-signal WHY]
          [--ledger PATH]                      not_executed on a lapsed lease needs the owner's death signal
  help`

const DEFAULT_LEDGER = ".mycelium/ledger.json"

async function startApi(ledgerPath: string, port: number): Promise<void> {
  const app = createLedgerApp({ storage: new FileLedgerStorage(ledgerPath) })
  const server = await serve(app.fetch, port)
  const addr = server.address()
  const actual = typeof addr === "object" && addr ? addr.port : port
  const base = `http://127.0.0.1:${actual}`
  console.log(`\nledger API listening on ${base} (no auth: local use only; Ctrl-C stops it)`)
  console.log(`  curl ${base}/v1/transitions`)
  console.log(`  curl '${base}/v1/transitions?stuck=true'`)
}

async function main(argv: string[]): Promise<number> {
  const [command = "help", ...rest] = argv
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      serve: { type: "boolean", default: false },
      port: { type: "string", default: "8787" },
      ledger: { type: "string" },
      stuck: { type: "boolean", default: false },
      verified: { type: "string" },
      reason: { type: "string" },
      by: { type: "string" },
      "override-death-signal": { type: "string" },
    },
  })
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535, got ${values.port}`)
  switch (command) {
    case "demo": {
      const ledgerPath = values.ledger ?? ".mycelium/demo-ledger.json"
      await runDemo({ ledgerPath })
      if (values.serve) await startApi(ledgerPath, port)
      return 0
    }
    case "serve":
      await startApi(values.ledger ?? DEFAULT_LEDGER, port)
      return 0
    case "transitions": {
      const ledger = new ActionLedger({ storage: new FileLedgerStorage(values.ledger ?? DEFAULT_LEDGER) })
      for (const e of await ledger.listTransitions({ stuck: values.stuck })) {
        console.log(
          `${e.requestId}\t${e.tool}\t${e.terminalOutcome}\t${e.sideEffectBoundary}\t${e.externalOperationRef ?? "-"}`,
        )
      }
      return 0
    }
    case "release": {
      const id = positionals[0]
      const verified = values.verified
      if (!id || (verified !== "completed" && verified !== "not_executed") || !values.reason || !values.by) {
        throw new UsageError("release ID --verified completed|not_executed --reason TEXT --by WHO")
      }
      const ledger = new ActionLedger({
        storage: new FileLedgerStorage(values.ledger ?? DEFAULT_LEDGER),
        reclaimRequiresDeathSignal: true,
      })
      const override = values["override-death-signal"]
      const row = await ledger.release(id, {
        verified,
        reason: values.reason,
        by: values.by,
        ...(override !== undefined ? { overrideDeathSignal: override } : {}),
      })
      console.log(`released ${row.requestId} as ${verified} (was ${row.releasedFromOutcome})`)
      return 0
    }
    case "help":
    case "--help":
    case "-h":
      console.log(HELP)
      return 0
    default:
      throw new UsageError(`unknown command '${command}'`)
  }
}

class UsageError extends Error {
  override readonly name = "UsageError"
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (e: unknown) => {
    if (e instanceof UsageError) console.error(`mycelium: ${e.message}\n\n${HELP}`)
    else console.error(`mycelium: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`)
    process.exitCode = e instanceof UsageError ? 2 : 1
  },
)
