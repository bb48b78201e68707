// `mycelium serve`: the ledger HTTP API over a local ledger file. The edge app needs hono, zod and jose, which
// are optional peers, so they are loaded only here.
import { parseArgs } from "node:util"
import { FileLedgerStorage } from "../../adapters/file.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../core/receipts/index.ts"
import type { ReceiptStore } from "../../core/receipts/store.ts"
import { CliError, importNeeding, UsageError } from "../errors.ts"
import { serve } from "../http-bridge.ts"
import { DEFAULT_LEDGER, parseOrUsage, parsePort, requireRegularFile, serveToken } from "../options.ts"
import { CLI } from "../style.ts"

export const HELP = `mycelium serve [--port N] [--ledger PATH] [--token T]

  the ledger HTTP API (its routes: GET /openapi.json, GET /docs) over a local ledger file, on 127.0.0.1 only: loopback Host values only,
  no cross-origin or non-JSON writes, bodies up to 1 MiB.
  --port N        default 8787; 0 picks a free port
  --ledger PATH   default .mycelium/ledger.json
  --token T       every /v1 request must send 'Authorization: Bearer T' (default: $MYCELIUM_TOKEN, else no auth;
                  an empty or blank value is refused)`

/** What the edge app needs at run time (its optional peer dependencies). */
export const SERVE_PACKAGES = ["hono", "jose"] as const

/** `token` (from --token or MYCELIUM_TOKEN) makes every /v1 request send `Authorization: Bearer <token>`. */
export async function startApi(
  command: string,
  ledgerPath: string,
  port: number,
  token: string | undefined,
  receipts?: { readonly store: ReceiptStore; readonly key: string; readonly agentId: string },
): Promise<void> {
  // serveToken() refuses these from the command line; a caller of its own must not get an open API from "" either.
  if (token !== undefined && !token.trim()) throw new UsageError(`${command}: the token is empty`)
  const [{ createLedgerApp }, { tokenAuth }] = await importNeeding(command, SERVE_PACKAGES, () =>
    Promise.all([import("../../edge/app.ts"), import("../token-auth.ts")]),
  )
  // One emitter for the one local tenant; the demo passes its own store and agent, so the chain continues.
  const tenantReceipts = receipts && {
    emitter: new ReceiptEmitter({
      signer: hmacReceiptSigner(receipts.key),
      store: receipts.store,
      agentId: receipts.agentId,
    }),
    keys: { hmac: receipts.key },
  }
  const app = createLedgerApp({
    storage: new FileLedgerStorage(ledgerPath),
    ...(token ? { authenticate: tokenAuth(token) } : {}),
    ...(tenantReceipts ? { receipts: () => tenantReceipts } : {}),
  })
  const server = await serve(app.fetch, port).catch((e: unknown) => {
    if ((e as { code?: unknown }).code !== "EADDRINUSE") throw e
    throw new CliError(
      `port ${port} is in use: pass --port N (--port 0 picks a free one; with npm start: npm start -- --port 0)`,
    )
  })
  const addr = server.address()
  const actual = typeof addr === "object" && addr ? addr.port : port
  const base = `http://127.0.0.1:${actual}`
  const auth = token ? "bearer token required" : "no auth: loopback only, same-origin JSON writes only"
  console.log(`\nledger API listening on ${base} (${auth}; Ctrl-C stops it)`)
  // Never the token itself: this banner ends up in terminals, CI logs and journals.
  const h = token ? ` -H "authorization: Bearer $MYCELIUM_TOKEN"` : ""
  console.log(`  curl${h} ${base}/v1/transitions`)
  console.log(`  curl${h} '${base}/v1/transitions?stuck=true'`)
  if (receipts) console.log(`  ${CLI} receipts export --url ${base} -o .mycelium/audit.jsonl`)
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseOrUsage("serve", () =>
    parseArgs({
      args,
      options: { port: { type: "string" }, ledger: { type: "string" }, token: { type: "string" } },
    }),
  )
  const token = serveToken("serve", values.token)
  const ledger = requireRegularFile(values.ledger ?? DEFAULT_LEDGER, "--ledger")
  await startApi("serve", ledger, parsePort(values.port), token)
  return 0
}
