// `mycelium receipts verify [FILE]`: checks a receipt file's signatures and hash chain, offline.
import { existsSync } from "node:fs"
import { parseArgs } from "node:util"
import { CliError, UsageError } from "../errors.ts"
import { parseOrUsage, requireRegularFile } from "../options.ts"
import { clean, green, printJson, red } from "../style.ts"

export const HELP = `mycelium receipts verify [FILE] [--key-env NAME | --jwks FILE] [--require-chain] [--json] [-c PATH]

  verifies every receipt of a JSONL receipt file (the Python original's format, with this port's chain sidecar):
  signatures, and the hash chain (a deleted, reordered, inserted or forged receipt is named).
  FILE       default: audit_receipt.path of mycelium.yaml, else .mycelium/receipts.jsonl
  --key-env  the variable holding the HMAC signing key (default MYCELIUM_SIGNING_KEY)
  --jwks     a JSON Web Key Set file, for JWS receipts (verifies with public keys only)
exit codes: 0 every receipt verifies, 1 some do not, 2 usage or config error`

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== "verify") throw new UsageError(`receipts: expected verify${sub ? `, got '${sub}'` : ""}`)
  const { values, positionals } = parseOrUsage("receipts verify", () =>
    parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c" },
        "key-env": { type: "string" },
        jwks: { type: "string" },
        "require-chain": { type: "boolean", default: false },
        json: { type: "boolean", default: false },
      },
    }),
  )
  if (positionals.length > 1) throw new UsageError("receipts verify takes at most one file")
  let file = positionals[0]
  if (!file) {
    const cfg = values.config ?? (existsSync("mycelium.yaml") ? "mycelium.yaml" : undefined)
    if (cfg) {
      const { loadConfig } = await import("../../node/config.ts")
      file = (await loadConfig(cfg, { onWarning: () => {} })).resolved.raw.audit_receipt?.path
    }
    file ??= ".mycelium/receipts.jsonl"
  }
  if (!existsSync(file)) throw new CliError(`no receipt file at ${file}`)
  requireRegularFile(file, "the receipt file")
  const { verifyReceipts } = await import("../../core/receipts/index.ts")
  const { FileReceiptStore } = await import("../../adapters/file-receipts.ts")
  type Keys = Parameters<typeof verifyReceipts>[1]
  let keys: Keys
  if (values.jwks) {
    const { readFileSync } = await import("node:fs")
    const { jwksVerifier } = await import("../../core/receipts/jws.ts")
    const jwks = requireRegularFile(values.jwks, "--jwks")
    try {
      keys = { jws: jwksVerifier(JSON.parse(readFileSync(jwks, "utf8"))) }
    } catch (e) {
      throw new UsageError(`--jwks ${jwks}: not a readable JSON Web Key Set (${(e as Error).message})`)
    }
  } else {
    const name = values["key-env"] ?? "MYCELIUM_SIGNING_KEY"
    const key = process.env[name]
    if (!key) throw new UsageError(`receipts verify: set ${name} to the signing key (or pass --jwks FILE)`)
    keys = { hmac: key }
  }
  const receipts = await new FileReceiptStore(file).list()
  const report = await verifyReceipts(receipts, keys, { requireChain: values["require-chain"] })
  if (values.json) printJson({ file, receipts: receipts.length, ok: report.ok, failures: report.failures })
  else {
    for (const f of report.failures)
      console.log(
        `${red("FAIL")}  #${f.index} ${clean(f.receiptId ?? "-")}  ${f.reason}: ${clean(f.message)}`,
      )
    console.log(
      report.ok
        ? green(`${receipts.length} receipts verified in ${file}`)
        : red(`${report.failures.length} problem(s) in ${receipts.length} receipts of ${file}`),
    )
  }
  return report.ok ? 0 : 1
}
