#!/usr/bin/env node
// `mycelium`: the command line (Node, Deno, Bun). The dispatcher imports nothing but the command it runs, so a
// command whose optional packages are missing cannot break `--help` or the other commands.
import { readFileSync } from "node:fs"
import { CliError, fileAccessError, UsageError } from "./errors.ts"
import { clean } from "./style.ts"

// An error's message quotes what it was given (a request id up to the 128 KiB an argument holds, a server's error
// text): past this it keeps its start and its end, which says what to do next.
const MESSAGE_CHARS = 2000

const bounded = (m: string): string =>
  m.length <= MESSAGE_CHARS
    ? m
    : `${m.slice(0, MESSAGE_CHARS / 2)}... (${m.length - MESSAGE_CHARS} characters cut) ...${m.slice(-MESSAGE_CHARS / 2)}`

const HELP = `mycelium <command> [options]        (mycelium <command> --help for each)

commands:
  init [-o PATH] [--minimal | --full] [--force]   write a mycelium.yaml that loads as written
  demo [--store file|memory|config] [--serve]     the duplicate-payment bug and the fix, end to end
  transitions list|show|release|mark-dead          operate the action ledger (file, Redis, Postgres, or -c config)
  tasks list|show|release                          operate the task ledger (file, Redis, Postgres, or -c config)
  receipts verify [FILE]                          check a receipt file's signatures and hash chain
  receipts export --url URL [-o FILE]             download the ledger API's receipts as a file verify checks
  doctor [-c PATH] [--json] [--strict]            read-only checks of mycelium.yaml and its stores
  serve [--port N] [--ledger PATH] [--token T]    the ledger HTTP API over a local ledger file (loopback only)
  release ID ...                                  short for: transitions release

options: --version, --help
exit codes: 0 done, 1 the operation failed or was refused, 2 a usage or config error, or a missing optional package`

interface Command {
  run(args: string[]): Promise<number>
  HELP?: string
}

const commands: Record<string, () => Promise<Command>> = {
  init: () => import("./commands/init.ts"),
  demo: () => import("./commands/demo.ts"),
  transitions: () => import("./commands/transitions.ts"),
  doctor: () => import("./commands/doctor.ts"),
  tasks: () => import("./commands/tasks.ts"),
  receipts: () => import("./commands/receipts.ts"),
  serve: () => import("./commands/serve.ts"),
  release: () => import("./commands/release.ts"),
}

function version(): string {
  // dist/cli/main.js and src/cli/main.ts both sit two folders below package.json.
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string
  }
  return pkg.version
}

async function main(argv: string[]): Promise<number> {
  const [name = "help", ...rest] = argv
  if (name === "help" || name === "--help" || name === "-h") {
    console.log(HELP)
    return 0
  }
  if (name === "--version" || name === "-v") {
    console.log(version())
    return 0
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!load) throw new UsageError(`unknown command '${name}'`)
  const command = await load()
  // Before `--` only: after it each word is an argument, such as a request id "-h" that a hint prints there.
  const flags = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest
  if (flags.includes("--help") || flags.includes("-h")) {
    console.log(command.HELP ?? HELP)
    return 0
  }
  return command.run(rest)
}

// `mycelium ... | head` closes the pipe early: that is the reader's choice, not an error worth a stack trace. The rest
// of the output is dropped and the command ends with its own exit code: exiting 0 here made a failing
// `receipts verify | head` pass under `set -o pipefail`. Any other write error (a full disk under `--json > f`) is
// one line and exit 1, as before but without Node's stack trace.
let stdoutGone = false
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (stdoutGone) return
  stdoutGone = true
  if (e.code === "EPIPE") return
  const why = /^E[A-Z]+: [^,]+/.exec(String(e.message))?.[0] ?? e.code ?? "an error"
  console.error(`mycelium: cannot write to standard output (${why}): nothing more is printed`)
  process.exit(1)
})

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (thrown: unknown) => {
    // A path the command could not read or write is named with the next step, not as a raw `Error: EACCES`.
    const e = fileAccessError(thrown)
    const err = e as { name?: string; message?: string; code?: string }
    // Messages quote request ids, tool names and file content: printed inert (style.ts `clean`) and bounded.
    const say = (m: unknown): string => `mycelium: ${clean(bounded(String(m)))}`
    if (e instanceof UsageError) console.error(`${say(e.message)}\n(mycelium --help lists the commands)`)
    else if (e instanceof CliError) console.error(say(e.message))
    else if (err?.name === "ConfigError") console.error(say(err.message))
    else console.error(say(e instanceof Error ? `${e.name}: ${e.message}` : String(e)))
    // A broken config is the caller's to fix (2); a refusal or an outage is an operation that failed (1).
    process.exitCode = e instanceof CliError ? e.exitCode : err?.name === "ConfigError" ? 2 : 1
  },
)
