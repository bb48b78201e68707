#!/usr/bin/env node
// `mycelium`: the command line (Node, Deno, Bun). The dispatcher imports nothing but the command it runs, so a
// command whose optional packages are missing cannot break `--help` or the other commands.
import { CliError, UsageError } from "./errors.ts"

const HELP = `mycelium <command>

commands:
  demo [--serve] [--port N] [--ledger PATH]   the duplicate-payment bug and the fix; --serve then keeps the
                                               local ledger API running on the demo's ledger file
  serve [--port N] [--ledger PATH]            the ledger HTTP API over a local ledger file
  transitions [--stuck] [--ledger PATH]       list transitions (stuck: need a human or a reconciler)
  release ID --verified completed|not_executed --reason TEXT --by WHO [--ledger PATH]
  help

exit codes: 0 done, 1 the operation failed or was refused, 2 a usage error or a missing optional package`

interface Command {
  run(args: string[]): Promise<number>
}

const commands: Record<string, () => Promise<Command>> = {
  demo: () => import("./commands/demo.ts"),
  serve: () => import("./commands/serve.ts"),
  transitions: () => import("./commands/transitions.ts"),
  release: () => import("./commands/release.ts"),
}

async function main(argv: string[]): Promise<number> {
  const [name = "help", ...rest] = argv
  if (name === "help" || name === "--help" || name === "-h") {
    console.log(HELP)
    return 0
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!load) throw new UsageError(`unknown command '${name}'`)
  return (await load()).run(rest)
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (e: unknown) => {
    if (e instanceof UsageError) console.error(`mycelium: ${e.message}\n\n${HELP}`)
    else if (e instanceof CliError) console.error(`mycelium: ${e.message}`)
    else console.error(`mycelium: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`)
    process.exitCode = e instanceof CliError ? e.exitCode : 1
  },
)
