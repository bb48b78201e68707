// `mycelium receipts verify [FILE]`: checks a receipt file's signatures and hash chain, offline.
import { existsSync, readFileSync } from "node:fs"
import { dirname } from "node:path"
import { envValue, pythonStrip } from "../../core/config/env.ts"
import { CliError, importNeeding, UsageError } from "../errors.ts"
import { parseOrUsage, requireRegularFile } from "../options.ts"
import { CLI, clean, green, printJson, red, shown, VALUE_CHARS } from "../style.ts"

export const HELP = `mycelium receipts verify [FILE] [--key-env NAME | --jwks FILE] [--allow-unchained] [--python-lock]
                         [--json] [-c PATH]
mycelium receipts export --url URL [-o FILE [--force]] [--token-env NAME] [--agent-id ID] [--ledger NAME]
                         [--max-receipts N] [--timeout SECONDS]

  verify: checks every receipt of a JSONL receipt file (the Python original's format, with this port's chain
  sidecar, or a file written by export): signatures, and the hash chain (a deleted, reordered, inserted or forged
  receipt is named).
  FILE       default: audit_receipt.path of mycelium.yaml, else .mycelium/receipts.jsonl
  --key-env  the variable holding the HMAC signing key (default MYCELIUM_SIGNING_KEY)
  --jwks     a JSON Web Key Set file, for JWS receipts (verifies with public keys only)
  --allow-unchained  accept receipts without a chain link (the Python original's, or chain: false), also among
             chained ones; a deleted unchained receipt then goes unseen. Default: every receipt needs its link
  --python-lock  running Python workers append to FILE: a line read half written is read again under the original's
             flock on FILE.lock (default: audit_receipt.python_lock of mycelium.yaml when FILE comes from it)

  export: downloads a tenant's receipts from the ledger HTTP API (GET /v1/receipts?format=jsonl, every page) into
  a JSONL file that verify checks offline.
  --url        the API's base URL; with a token, https (plain http only to a loopback host)
  -o FILE      written whole or not at all (default: standard output); never over a file or symlink already
             there (exit 1), nor one created there during the download
  --force      replace what is at FILE (a symlink itself, not its target)
  --token-env  the variable holding a bearer token with the ledger:reader scope (default MYCELIUM_TOKEN)
  --agent-id, --ledger   only that agent's receipts, or that chain's
  --max-receipts  more receipts than N fail the export, no file kept (default 1000000)
  --timeout    seconds each page may take, headers and body (default 30)
exit codes: 0 every receipt verifies (export: written), 1 some do not (export: failed), 2 usage or config error`

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub === "export") return exportCommand(rest)
  if (sub !== "verify")
    throw new UsageError(`receipts: expected verify or export${sub ? `, got '${sub}'` : ""}`)
  const { values, positionals } = parseOrUsage("receipts verify", {
    args: rest,
    allowPositionals: true,
    options: {
      config: { type: "string", short: "c" },
      "key-env": { type: "string" },
      jwks: { type: "string" },
      // The default now; still accepted so scripts written for it keep working.
      "require-chain": { type: "boolean", default: false },
      "allow-unchained": { type: "boolean", default: false },
      "python-lock": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  })
  if (positionals.length > 1) throw new UsageError("receipts verify takes at most one file")
  if (values["require-chain"] && values["allow-unchained"])
    throw new UsageError("receipts verify: --require-chain and --allow-unchained contradict each other")
  let file = positionals[0]
  let pythonLock = values["python-lock"]
  // "" (`verify "$FILE"` with FILE unset) would check the default file and report it verified.
  if (file === "") throw new UsageError("receipts verify: the file argument is empty: pass a file path")
  if (!file) {
    const cfg = values.config ?? (existsSync("mycelium.yaml") ? "mycelium.yaml" : undefined)
    if (cfg) {
      const { loadConfig } = await import("../../node/config.ts")
      const ar = (await loadConfig(cfg, { onWarning: () => {} })).resolved.raw.audit_receipt
      file = ar?.path
      pythonLock ||= (file !== undefined && ar?.python_lock) === true
    }
    file ??= ".mycelium/receipts.jsonl"
  }
  if (!existsSync(file)) throw new CliError(`no receipt file at ${file}`)
  requireRegularFile(file, "the receipt file")
  // A directory there fails to read with an EISDIR that names no path.
  requireRegularFile(`${file}.chain.jsonl`, "the chain sidecar")
  const { verifyReceipts } = await import("../../core/receipts/index.ts")
  const { FileReceiptStore } = await import("../../adapters/file-receipts.ts")
  type Keys = Parameters<typeof verifyReceipts>[1]
  let keys: Keys
  if (values.jwks) {
    const jwks = requireRegularFile(values.jwks, "--jwks")
    const bad = (e: unknown) =>
      new UsageError(`--jwks ${jwks}: not a readable JSON Web Key Set (${(e as Error).message})`)
    let set: unknown
    try {
      set = JSON.parse(readFileSync(jwks, "utf8"))
    } catch (e) {
      throw bad(e)
    }
    // JWS verification needs the optional peer jose: a missing one is exit 2 with the npm install line.
    const { jwksVerifier } = await importNeeding(
      "receipts verify --jwks",
      ["jose"],
      () => import("../../core/receipts/jws.ts"),
    )
    try {
      keys = { jws: jwksVerifier(set as Parameters<typeof jwksVerifier>[0]) }
    } catch (e) {
      throw bad(e)
    }
  } else {
    const name = values["key-env"] ?? "MYCELIUM_SIGNING_KEY"
    // Stripped as the original (and mycelium.yaml's signing_key_env) reads the key.
    // envValue: a name such as `__proto__` reads the prototype, which is no text (it crashed in pythonStrip).
    const key = pythonStrip(envValue(process.env, name) ?? "")
    if (!key) throw new UsageError(`receipts verify: set ${name} to the signing key (or pass --jwks FILE)`)
    keys = { hmac: key }
  }
  // The sidecar before the file: a receipt is written before its link, so each link read first has its receipt in
  // the file read after. The other way round, one a live worker appended in between read as a receipt cut off.
  const heads = sidecarHeads(`${file}.chain.jsonl`)
  const receipts = await new FileReceiptStore(file, pythonLock ? { pythonLock } : {}).list()
  const report = await verifyReceipts(receipts, keys, {
    ...(values["allow-unchained"] ? { allowUnchained: true } : { requireChain: true }),
    heads,
  })
  if (values.json) printJson({ file, receipts: receipts.length, ok: report.ok, failures: report.failures })
  else {
    for (const f of report.failures)
      console.log(
        `${red("FAIL")}  #${f.index} ${shown(f.receiptId ?? "-")}  ${f.reason}: ${shown(f.message, VALUE_CHARS)}`,
      )
    console.log(
      report.ok
        ? green(`${receipts.length} receipts verified in ${file}`)
        : red(`${report.failures.length} problem(s) in ${receipts.length} receipts of ${file}`),
    )
  }
  return report.ok ? 0 : 1
}

/**
 * The newest link of each chain in the sidecar. The store writes a receipt before its link, so a link whose receipt
 * the file lacks was left by an edit: a receipt cut from the end, with its link left behind, verified as a shorter
 * chain. As verify's known heads, that is `truncated`; a forged link can only make the file fail.
 */
function sidecarHeads(path: string): Record<string, { seq: number; digest: string }> {
  const heads = new Map<string, { seq: number; digest: string }>()
  if (!existsSync(path)) return {}
  for (const [i, line] of readFileSync(path, "utf8").split("\n").entries()) {
    if (!line.trim()) continue
    let l: { ledger?: unknown; seq?: unknown; digest?: unknown }
    try {
      l = JSON.parse(line)
    } catch {
      throw new CliError(`${clean(path)} line ${i + 1} is not JSON: the chain sidecar is damaged`)
    }
    const { ledger, seq, digest } = l ?? {}
    if (typeof ledger !== "string" || typeof seq !== "number" || typeof digest !== "string") continue
    if (seq >= (heads.get(ledger)?.seq ?? -1)) heads.set(ledger, { seq, digest })
  }
  // fromEntries defines each chain as an own key: an assignment to heads["__proto__"] would set the prototype.
  return Object.fromEntries(heads)
}

async function exportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("receipts export", {
    args,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      output: { type: "string", short: "o" },
      "token-env": { type: "string" },
      "agent-id": { type: "string" },
      ledger: { type: "string" },
      "max-receipts": { type: "string" },
      timeout: { type: "string" },
      force: { type: "boolean", default: false },
    },
  })
  if (positionals.length) throw new UsageError("receipts export takes no file argument: pass -o FILE")
  const { exportLimits, exportReceipts } = await import("../receipts-export.ts")
  const limits = exportLimits({ maxReceipts: values["max-receipts"], timeout: values.timeout })
  if (!values.url) throw new UsageError("receipts export needs --url (the ledger API's base URL)")
  const tokenEnv = values["token-env"] ?? "MYCELIUM_TOKEN"
  const token = envValue(process.env, tokenEnv) || undefined
  if (values["token-env"] && !token) throw new UsageError(`receipts export: ${tokenEnv} is not set`)
  const base = { url: values.url, token, agentId: values["agent-id"], ledger: values.ledger, ...limits }
  const out = values.output
  if (out === undefined) {
    const n = await exportReceipts({
      ...base,
      write: (text) => {
        process.stdout.write(text)
        // A reader that stopped (`| head`): main.ts drops the rest of the output, and every page still fetched (up to
        // --max-receipts) was the server's work for nobody, then reported "exported" with exit 0.
        // (A stdio stream is never destroyed; `errored` is set by the write that failed.)
        if ((process.stdout.errored as NodeJS.ErrnoException | null | undefined)?.code === "EPIPE")
          throw new CliError("standard output was closed: the export stopped before its last page")
      },
    })
    console.error(`${n} receipts exported`)
    return 0
  }
  requireRegularFile(out, "-o")
  // A partial export would verify as a shorter chain, so the file appears only once every page has arrived.
  const {
    closeSync,
    constants,
    copyFileSync,
    fsyncSync,
    linkSync,
    lstatSync,
    openSync,
    renameSync,
    rmSync,
    writeSync,
  } = await import("node:fs")
  // Nothing at -o is replaced unless --force says so: the rename replaced an earlier export, the live store's own
  // receipts.jsonl (its only copy) or a symlink. lstat: a dangling link is something there too.
  if (!values.force && lstatSync(out, { throwIfNoEntry: false })) throw exists(out)
  const partial = `${out}.partial-${process.pid}`
  let fd: number
  try {
    // "wx": a file or symlink already at this predictable name is never written through.
    fd = openSync(partial, "wx", 0o600)
  } catch (e) {
    const code = (e as { code?: string }).code
    // ENOTDIR (a path below a file) was refused above.
    if (code === "ENOENT")
      throw new UsageError(
        `-o ${clean(out)}: the folder ${clean(dirname(out))} does not exist: create it or pick another -o`,
      )
    if (code !== "EEXIST") throw e
    throw new CliError(`cannot create ${clean(partial)} (EEXIST): remove it or pick another -o`)
  }
  // Ctrl-C or SIGTERM mid-export: a signal's default action skips the cleanup below, which left the partial file (a
  // shorter history) behind. It goes here, then the same signal ends the process as it would have.
  const onSignal = (signal: NodeJS.Signals): void => {
    rmSync(partial, { force: true })
    process.kill(process.pid, signal)
  }
  const signals = ["SIGINT", "SIGTERM"] as const
  for (const s of signals) process.once(s, onSignal)
  try {
    const n = await exportReceipts({ ...base, write: (text) => writeSync(fd, text) })
    fsyncSync(fd)
    closeSync(fd)
    if (values.force) renameSync(partial, out)
    else {
      // A link fails on a taken name: a file created at -o during the download (another export) is not replaced
      // either, as a rename would. Where there are no hard links (FAT, some network mounts), a copy that creates the
      // file only if absent.
      try {
        linkSync(partial, out)
      } catch (e) {
        if (taken(e)) throw exists(out)
        try {
          copyFileSync(partial, out, constants.COPYFILE_EXCL)
        } catch (e2) {
          if (taken(e2)) throw exists(out)
          rmSync(out, { force: true })
          throw e2
        }
      }
      rmSync(partial)
    }
    console.log(green(`${n} receipts exported to ${clean(out)}`))
    console.log(
      `  verify them offline: MYCELIUM_SIGNING_KEY=<their signing key> ${CLI} receipts verify ${clean(out)}` +
        " (or --jwks FILE for JWS receipts; every receipt must carry its chain link)",
    )
    return 0
  } catch (e) {
    try {
      closeSync(fd)
    } catch {}
    rmSync(partial, { force: true })
    throw e
  } finally {
    for (const s of signals) process.off(s, onSignal)
  }
}

const exists = (path: string): CliError =>
  new CliError(`${clean(path)} already exists (use --force to overwrite)`)

const taken = (e: unknown): boolean => (e as { code?: string }).code === "EEXIST"
