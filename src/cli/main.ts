#!/usr/bin/env node
// `mycelium`: the command line (Node, Deno, Bun).
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../adapters/file.ts"
import { ActionLedger } from "../core/index.ts"
import { createLedgerApp } from "../edge/app.ts"
import { AuthError, type LedgerScope, type Principal } from "../edge/auth.ts"
import { runDemo } from "./demo.ts"
import { serve } from "./serve.ts"

const HELP = `mycelium <command>

commands:
  demo [--serve] [--port N] [--ledger PATH] [--token T]
                                              the duplicate-payment bug and the fix; --serve then keeps the
                                              local ledger API running on the demo's ledger file
  serve [--port N] [--ledger PATH] [--token T]
                                              the ledger HTTP API over a local ledger file (loopback only;
                                              --token or MYCELIUM_TOKEN requires 'Authorization: Bearer T')
  transitions [--stuck] [--ledger PATH]       list transitions (stuck: need a human or a reconciler)
  release ID --verified completed|not_executed --reason TEXT --by WHO [--ledger PATH]
  help`

const DEFAULT_LEDGER = ".mycelium/ledger.json"

/** `--token T`: every /v1 request must send `Authorization: Bearer T`. Compared in constant time. */
function tokenAuth(token: string): (authorization: string | undefined) => Promise<Principal> {
  const expected = new TextEncoder().encode(`Bearer ${token}`)
  const all = new Set<LedgerScope>(["agent", "reader", "operator", "store"])
  return async (authorization) => {
    const got = new TextEncoder().encode(authorization ?? "")
    let diff = got.length ^ expected.length
    for (let i = 0; i < expected.length; i++) diff |= (got[i] ?? 0) ^ (expected[i] as number)
    if (diff !== 0) throw new AuthError("unauthorized", "send 'Authorization: Bearer <the --token value>'")
    return { tenant: "default", subject: "local", scopes: all }
  }
}

async function startApi(ledgerPath: string, port: number, token: string | undefined): Promise<void> {
  const app = createLedgerApp({
    storage: new FileLedgerStorage(ledgerPath),
    ...(token ? { authenticate: tokenAuth(token) } : {}),
  })
  const server = await serve(app.fetch, port)
  const addr = server.address()
  const actual = typeof addr === "object" && addr ? addr.port : port
  const base = `http://127.0.0.1:${actual}`
  const auth = token ? "bearer token required" : "no auth: loopback only, same-origin JSON writes only"
  console.log(`\nledger API listening on ${base} (${auth}; Ctrl-C stops it)`)
  const h = token ? ` -H 'authorization: Bearer ${token}'` : ""
  console.log(`  curl${h} ${base}/v1/transitions`)
  console.log(`  curl${h} '${base}/v1/transitions?stuck=true'`)
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
      token: { type: "string" },
    },
  })
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535, got ${values.port}`)
  switch (command) {
    case "demo": {
      const ledgerPath = values.ledger ?? ".mycelium/demo-ledger.json"
      await runDemo({ ledgerPath })
      if (values.serve) await startApi(ledgerPath, port, values.token ?? process.env.MYCELIUM_TOKEN)
      return 0
    }
    case "serve":
      await startApi(values.ledger ?? DEFAULT_LEDGER, port, values.token ?? process.env.MYCELIUM_TOKEN)
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
      const row = await ledger.release(id, { verified, reason: values.reason, by: values.by })
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
