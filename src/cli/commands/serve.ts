// `mycelium serve`: the ledger HTTP API over a local ledger file. The edge app needs hono, zod and jose, which
// are optional peers, so they are loaded only here.
import { FileLedgerStorage, type FileLedgerStorageOptions } from "../../adapters/file.ts"
import { hmacReceiptSigner, ReceiptEmitter } from "../../core/receipts/index.ts"
import type { ReceiptStore } from "../../core/receipts/store.ts"
import type { TenantReceipts } from "../../edge/context.ts"
import { CliError, importNeeding, UsageError } from "../errors.ts"
import { type FetchHandler, serve } from "../http-bridge.ts"
import {
  configuredStore,
  describeStore,
  directStore,
  loadOperatorConfig,
  operatorConfigPath,
  releasePolicy,
  signingReceipts,
} from "../ledger-access.ts"
import {
  blank,
  DEFAULT_LEDGER,
  parseOrUsage,
  parsePort,
  requireRegularFile,
  type ServeToken,
  serveToken,
} from "../options.ts"
import { CLI } from "../style.ts"

export const HELP = `mycelium serve [--port N] [--ledger PATH [--python-lock]] [--token T] [-c PATH]

  the ledger HTTP API (its routes: GET /openapi.json, GET /docs) over a local ledger file, on 127.0.0.1 only: loopback Host values only,
  no cross-origin or non-JSON writes, bodies up to 1 MiB.
  --port N        default 8787; 0 picks a free port
  --ledger PATH   default: $MYCELIUM_LEDGER_FILE (unless -c is given), else the file the config ledgers its tools
                  in, else .mycelium/ledger.json: the file the transitions commands read
  --python-lock   take the Python original's flock on PATH.lock (Python workers use the file now); the config's
                  file takes its python_lock
  --token T       every /v1 request must send 'Authorization: Bearer T' (default: $MYCELIUM_TOKEN, else no auth;
                  an empty or blank value is refused)
  -c PATH         release policy (transition:) and release signing (audit_receipt:) from this mycelium.yaml, as
                  the transitions commands apply them (default ./mycelium.yaml when neither --ledger nor
                  MYCELIUM_LEDGER_FILE names the file)`

/** What the edge app needs at run time (its optional peer dependencies). */
export const SERVE_PACKAGES = ["hono", "jose"] as const

type ServedReceipts = { readonly store: ReceiptStore; readonly key: string; readonly agentId: string }

/** How the served ledger settles releases (`mycelium serve`: the transitions commands' policy). */
export interface ServedPolicy {
  readonly reclaimRequiresDeathSignal?: boolean
  readonly presumedDeadAfter?: number
  /** Signs releases and completed calls, as `transitions release` signs with the config's `audit_receipt:`. */
  readonly receipts?: TenantReceipts | null
}

/** The API bound to its port; requests wait until `open` names what it serves. */
export interface BoundApi {
  /**
   * Serves `ledgerPath` (with the demo's `receipts`, or the config's in `policy`; `file`: the store's options, the
   * config's `python_lock`) and prints how to reach it.
   */
  open(
    ledgerPath: string,
    receipts?: ServedReceipts,
    policy?: ServedPolicy,
    file?: FileLedgerStorageOptions,
  ): void
  close(): void
}

/**
 * Loads the optional packages and binds the port. `demo --serve` does this before the demo writes anything, so a
 * missing package or a taken port stops it with the files another demo serves left alone. `token` (from --token or
 * MYCELIUM_TOKEN) makes every /v1 request send `Authorization: Bearer <token>`.
 */
export async function bindApi(
  command: string,
  port: number,
  token: ServeToken | undefined,
): Promise<BoundApi> {
  // serveToken() refuses these from the command line; a caller of its own must not get an open API from "" either.
  if (token !== undefined && blank(token.value)) throw new UsageError(`${command}: the token is empty`)
  const [{ createLedgerApp }, { tokenAuth }] = await importNeeding(command, SERVE_PACKAGES, () =>
    Promise.all([import("../../edge/app.ts"), import("../token-auth.ts")]),
  )
  let ready: (handler: FetchHandler) => void = () => {}
  const handler = new Promise<FetchHandler>((resolve) => {
    ready = resolve
  })
  const server = await serve(async (request) => (await handler)(request), port).catch((e: unknown) => {
    if ((e as { code?: unknown }).code !== "EADDRINUSE") throw e
    throw new CliError(
      `port ${port} is in use: pass --port N (--port 0 picks a free one; with npm start: npm start -- --port 0)`,
    )
  })
  const open = (
    ledgerPath: string,
    receipts?: ServedReceipts,
    policy: ServedPolicy = {},
    file: FileLedgerStorageOptions = {},
  ): void => {
    // One emitter for the one local tenant; the demo passes its own store and agent, so the chain continues.
    const { receipts: configured, ...release } = policy
    const tenantReceipts =
      configured ??
      (receipts && {
        emitter: new ReceiptEmitter({
          signer: hmacReceiptSigner(receipts.key),
          store: receipts.store,
          agentId: receipts.agentId,
        }),
        keys: { hmac: receipts.key },
      })
    const app = createLedgerApp({
      storage: new FileLedgerStorage(ledgerPath, file),
      ...release,
      ...(token ? { authenticate: tokenAuth(token.value) } : {}),
      ...(tenantReceipts ? { receipts: () => tenantReceipts } : {}),
    })
    ready(app.fetch)
    const addr = server.address()
    const actual = typeof addr === "object" && addr ? addr.port : port
    const base = `http://127.0.0.1:${actual}`
    const auth = token ? "bearer token required" : "no auth: loopback only, same-origin JSON writes only"
    console.log(`\nledger API listening on ${base} (${auth}; Ctrl-C stops it)`)
    // Never the token itself: this banner ends up in terminals, CI logs and journals.
    const h = token ? ` -H "authorization: Bearer ${token.shown}"` : ""
    console.log(`  curl${h} ${base}/v1/transitions`)
    console.log(`  curl${h} '${base}/v1/transitions?stuck=true'`)
    if (receipts) console.log(`  ${CLI} receipts export --url ${base} -o .mycelium/audit.jsonl`)
  }
  return { open, close: () => server.close() }
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseOrUsage("serve", {
    args,
    options: {
      port: { type: "string" },
      ledger: { type: "string" },
      token: { type: "string" },
      config: { type: "string", short: "c" },
      "python-lock": { type: "boolean" },
    },
  })
  const token = serveToken("serve", values.token)
  // The file `transitions` reads, by its rules (`--file PATH` there is `--ledger PATH` here): --ledger, else
  // MYCELIUM_LEDGER_FILE unless -c is given, else the file the config ledgers its tools in. Serving another one (the
  // default beside an exported variable or a config that ledgers elsewhere) answered an operator with another
  // ledger's rows, and settled releases there, while the stuck row stayed stuck.
  const direct = directStore(values)
  // The policy `transitions release` applies to this file: a release the command line refuses is refused over HTTP.
  const configPath = operatorConfigPath(values.config, direct !== null)
  const config = await loadOperatorConfig(configPath)
  const choice = direct ?? (config ? configuredStore(config, configPath, "pass --ledger PATH") : null)
  // As `transitions` refuses it: the default file, served beside a config that ledgers no tool, answered with rows
  // the operator commands under that config never show.
  if (config && !choice)
    throw new UsageError(`${configPath} ledgers no tool: add action_ledger.tools, or pass --ledger PATH`)
  if (choice && (choice.kind !== "file" || !choice.path))
    throw new UsageError(
      `serve serves a ledger file; ${
        direct
          ? `${direct.kind === "redis" ? "MYCELIUM_REDIS_URL" : "MYCELIUM_POSTGRES_DSN"} names`
          : `${configPath} ledgers its tools on`
      } ${describeStore(choice)}: pass --ledger PATH`,
    )
  const from = values.ledger !== undefined ? "--ledger" : direct ? "MYCELIUM_LEDGER_FILE" : "the ledger file"
  const ledger = requireRegularFile(choice?.path ?? DEFAULT_LEDGER, from)
  // A missing signing key is the config's ConfigError (exit 2), before the port is bound.
  const emitter = await signingReceipts(config)
  const api = await bindApi("serve", parsePort(values.port), token)
  // Its python_lock too (the config's, or --python-lock), as `transitions` opens it: a release written beside a
  // Python worker's write without the original's flock is undone by that write, or undoes the worker's row.
  api.open(
    ledger,
    undefined,
    {
      ...releasePolicy(config),
      ...(emitter && config && { receipts: { emitter, keys: { hmac: config.resolved.signingKey ?? "" } } }),
    },
    choice?.pythonLock !== undefined ? { pythonLock: choice.pythonLock } : {},
  )
  return 0
}
