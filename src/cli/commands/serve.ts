// `mycelium serve`: the ledger HTTP API over a local ledger file. The edge app needs hono, zod and jose, which
// are optional peers, so they are loaded only here.
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../../adapters/file.ts"
import { CliError, importNeeding } from "../errors.ts"
import { serve } from "../http-bridge.ts"
import { DEFAULT_LEDGER, parseOrUsage, parsePort } from "../options.ts"

export const HELP = `mycelium serve [--port N] [--ledger PATH]

  the ledger HTTP API (docs/http-api.md) over a local ledger file, on 127.0.0.1 only, without auth: for local use.
  --port N        default 8787; 0 picks a free port
  --ledger PATH   default .mycelium/ledger.json`

/** What the edge app needs at run time (its optional peer dependencies). */
export const SERVE_PACKAGES = ["hono", "zod", "jose"] as const

export async function startApi(command: string, ledgerPath: string, port: number): Promise<void> {
  const { createLedgerApp } = await importNeeding(command, SERVE_PACKAGES, () => import("../../edge/app.ts"))
  const app = createLedgerApp({ storage: new FileLedgerStorage(ledgerPath) })
  const server = await serve(app.fetch, port).catch((e: unknown) => {
    if ((e as { code?: unknown }).code !== "EADDRINUSE") throw e
    throw new CliError(`port ${port} is in use: pass --port N (--port 0 picks a free one)`)
  })
  const addr = server.address()
  const actual = typeof addr === "object" && addr ? addr.port : port
  const base = `http://127.0.0.1:${actual}`
  console.log(`\nledger API listening on ${base} (no auth: local use only; Ctrl-C stops it)`)
  console.log(`  curl ${base}/v1/transitions`)
  console.log(`  curl '${base}/v1/transitions?stuck=true'`)
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseOrUsage("serve", () =>
    parseArgs({
      args,
      options: { port: { type: "string" }, ledger: { type: "string" } },
    }),
  )
  await startApi("serve", values.ledger ?? DEFAULT_LEDGER, parsePort(values.port))
  return 0
}
