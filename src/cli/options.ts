// What several commands share: the default ledger file, the port check, and bad flags as usage errors.
import { statSync } from "node:fs"
import { type ParseArgsConfig, parseArgs } from "node:util"
import { tableName } from "../adapters/neon-kit.ts"
import { blank } from "../core/blank.ts"
import { storeUrlProblem } from "../core/config/store-url.ts"
import { UsageError } from "./errors.ts"

export const DEFAULT_LEDGER = ".mycelium/ledger.json"

/** Host names that stay on this machine: the local server answers only these, and a token may go there over http. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"])

// A flag's value given empty or blank (`--file "$LEDGER"` with LEDGER unset) read as left out: an operator's release
// went to the store MYCELIUM_LEDGER_FILE, ./mycelium.yaml or the default names, `--port ""` served on a random port,
// `list --tool ""` listed every tool and `export --agent-id ""` every agent's receipts. Every value flag refuses it,
// but `--prefix`: '' is a Redis prefix a store may use, and it is taken as given. `--token` and
// `--override-death-signal` say why themselves.
const BLANK_ALLOWED: ReadonlySet<string> = new Set(["prefix", "token", "override-death-signal"])

// Text that shows nothing: empty, white space, or only invisible characters (U+200B, U+2060, U+FEFF, controls),
// which String.trim() keeps: `--by $'\u200b'` recorded an operator no one can read. The ledgers' own test.
export { blank }

/**
 * Parses `config` with `parseArgs`; an unknown or malformed flag becomes a one-line usage error (exit 2), not a
 * TypeError stack. Node's own messages span lines (printed as `\x0a`) and advise `-- "--stroe"` for a mistyped flag.
 * An empty or blank value of a flag is one too, and so is a value flag given twice: parseArgs keeps the last one
 * silently (`release --verified completed ... --verified not-executed` recorded not_executed, `--file a --file b`
 * acted on b). A boolean flag may repeat.
 */
export function parseOrUsage<T extends ParseArgsConfig>(
  command: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  let parsed: ReturnType<typeof parseArgs<T>> & { tokens?: { kind: string; name?: string }[] }
  try {
    parsed = parseArgs({ ...config, tokens: true }) as typeof parsed
  } catch (e) {
    throw new UsageError(`${command}: ${parseArgsProblem(command, e as { code?: string; message?: string })}`)
  }
  const seen = new Set<string>()
  for (const { kind, name = "" } of parsed.tokens ?? []) {
    if (kind !== "option" || config.options?.[name]?.type !== "string") continue
    if (seen.has(name))
      throw new UsageError(
        `${command}: --${name} given twice: pass it once (the last one would win silently)`,
      )
    seen.add(name)
  }
  for (const [flag, v] of Object.entries(parsed.values)) {
    if (typeof v === "string" && blank(v) && !BLANK_ALLOWED.has(flag))
      throw new UsageError(
        `${command}: --${flag} is ${v ? "blank" : "empty"} (an unset variable?): pass a value, or leave it out`,
      )
    // `-c=prod.yaml` is the path "=prod.yaml" to parseArgs (a short flag takes the rest of its word): `init -o=x`
    // wrote a file named "=x".
    if ((flag === "config" || flag === "output") && typeof v === "string" && v.startsWith("="))
      throw new UsageError(
        `${command}: --${flag} '${v}' starts with '=': write -${flag[0]} PATH or --${flag}=PATH`,
      )
  }
  return parsed
}

function parseArgsProblem(
  command: string,
  { code, message = "" }: { code?: string; message?: string },
): string {
  // The first quoted word ('--stroe', 'foo'), and the flag by the long name the help lists: Node names it in
  // '-c, --config <value>' or, after a '-c', in "use '--config=-XYZ'".
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? ""
  const flag = /--[\w-]+/.exec(message)?.[0] ?? quoted
  const help = `(see mycelium ${command} --help)`
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option '${quoted}' ${help}`
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") return `unexpected argument '${quoted}' ${help}`
  if (code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") return message.split("\n")[0] ?? ""
  if (message.includes("does not take")) return `${flag} takes no value`
  // `--port -5`: parseArgs will not take a value that looks like a flag.
  if (message.includes("ambiguous"))
    return `${flag} needs a value (for one starting with '-', write ${flag}=-X)`
  return `${flag} needs a value`
}

/**
 * A path the command will read whole must be a regular file when it exists (a symlink to one is fine): a
 * directory fails with a bare EISDIR, and /dev/zero or a FIFO is read forever.
 */
export function requireRegularFile(path: string, what: string): string {
  // Both would fail later with a raw ENOENT or ENOTDIR (or EEXIST from mkdir), read as an outage (exit 1).
  if (!path) throw new UsageError(`${what} is empty: pass a file path`)
  let st: ReturnType<typeof statSync> | undefined
  try {
    st = statSync(path)
  } catch (e) {
    if ((e as { code?: string }).code === "ENOTDIR")
      throw new UsageError(`${what} ${path} is below a file, not a folder: pass another path`)
    return path
  }
  if (!st.isFile())
    throw new UsageError(
      `${what} ${path} is ${st.isDirectory() ? "a directory" : "not a regular file"}: pass a file`,
    )
  return path
}

export function parsePort(value: string | undefined): number {
  // Digits only: Number(" ") is 0, a random port, and Number() also reads "0x1f90", "8e3" and " 80" as ports.
  const port = value === undefined ? 8787 : /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`--port must be 0..65535, got ${value}`)
  return port
}

/** `--table` checked as the store checks it (`max`: its length limit): the store's error would read as an outage. */
export function tableFlag(table: string | undefined, max: number): { table?: string } {
  if (table === undefined) return {}
  try {
    return { table: tableName(table, "", max) }
  } catch (e) {
    throw new UsageError(`--table: ${(e as Error).message}`)
  }
}

/**
 * A Redis URL from a flag or variable (`what`): another scheme or a malformed URL is the caller's typo, not an outage
 * (exit 2). The problem is named, the URL never echoed: a mistyped one may still carry a password.
 */
export function redisUrl(url: string, what: string): string {
  const problem = storeUrlProblem("redis", url)
  if (problem) throw new UsageError(`${what} ${problem}`)
  return url
}

/** A Postgres DSN from a flag or variable: the drivers take a URL only (libpq's `host=…` form dialled host `base`). */
export function postgresDsn(dsn: string, what: string): string {
  if (!/^postgres(ql)?:\/\//i.test(dsn)) throw new UsageError(`${what} must be a postgres:// URL`)
  const problem = storeUrlProblem("postgres", dsn)
  if (problem) throw new UsageError(`${what} ${problem}`)
  return dsn
}

/** The local API's token, and how a hint printed for the user sends it. */
export interface ServeToken {
  readonly value: string
  readonly shown: string
}

/**
 * `--token T` for the local API. An empty or blank value (`--token "$UNSET_VAR"` in a script) would otherwise read as
 * "no token" and open every scope, operator included, to any local process: refused. An empty MYCELIUM_TOKEN is
 * unset, as `receipts export` reads it; a blank one is refused too.
 */
export function serveToken(command: string, flag: string | undefined): ServeToken | undefined {
  if (flag !== undefined && blank(flag))
    throw new UsageError(
      `${command}: --token is empty or blank: pass the token clients must send, or leave --token out`,
    )
  const env = process.env.MYCELIUM_TOKEN
  if (flag === undefined && env && blank(env))
    throw new UsageError(
      `${command}: MYCELIUM_TOKEN is blank: set it to the token clients must send, or unset it`,
    )
  const value = flag ?? env
  // How the printed curl hints send it, never the token itself: a user who typed --token never set the variable.
  return value ? { value, shown: flag === undefined ? "$MYCELIUM_TOKEN" : "<the --token value>" } : undefined
}

// JSON.parse turns 1e400 into Infinity (stored as null), 1e-400 into 0 and 9007199254740993 (with or without `.0`)
// into 9007199254740992: the result an operator records would silently differ from the one typed. Valid JSON only
// (parsed first), so a number outside a string is the only token here with digits.
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g

// A decimal's value as significant digits and the power of ten before them, so `100.0`, `1e2` and `1E+2` compare
// equal. The sign is left out: a double keeps it, and -0 is 0 here.
function decimalValue(text: string): string {
  const [, int = "", frac = "", exp = "0"] = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text) ?? []
  const digits = int + frac
  const lead = digits.search(/[1-9]/)
  if (lead < 0) return "0"
  return `${digits.slice(lead).replace(/0+$/, "")}e${Number(exp) + int.length - lead}`
}

/**
 * `--result-json`: JSON whose numbers are all stored as typed; anything else is a usage error naming the value. A
 * number is kept when the double it parses to writes back (shortest form) as the same decimal value: `0.1` is kept,
 * `0.10000000000000001`, `9007199254740993.0` and `1e400` are not, nor is an exact `1152921504606846976` (2^60),
 * which would be written back as 1152921504606847000.
 */
export function parseResultJson(command: string, text: string): unknown {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw new UsageError(`${command}: --result-json is not JSON (${(e as Error).message})`)
  }
  for (const [token] of text.matchAll(JSON_TOKEN)) {
    if (token.startsWith('"')) continue
    const n = Number(token)
    if (!Number.isFinite(n) || decimalValue(String(n)) !== decimalValue(token))
      throw new UsageError(
        `${command}: --result-json number ${token.length > 40 ? `${token.slice(0, 37)}...` : token} cannot be ` +
          "stored as typed (out of range, or more digits than a double keeps): pass it as a string",
      )
  }
  return value
}
