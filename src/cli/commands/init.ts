// `mycelium init`: writes a mycelium.yaml that loads as written.
import { lstatSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import { parseArgs } from "node:util"
import { CliError, UsageError } from "../errors.ts"
import { parseOrUsage, requireRegularFile } from "../options.ts"
import { CLI, dim } from "../style.ts"
import { TEMPLATES, type TemplateName } from "../templates.ts"

export const HELP = `mycelium init [-o PATH] [--minimal | --full] [--force]

  writes mycelium.yaml (or PATH):
    (default)   quickstart: one tool that must never run twice, on a file ledger
    --minimal   several guards: a ledgered delete, a deduplicated task, state flush, signed receipts
    --full      every section with its defaults, commented
  --force       overwrite an existing file`

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("init", () =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        output: { type: "string", short: "o" },
        full: { type: "boolean", default: false },
        minimal: { type: "boolean", default: false },
        force: { type: "boolean", default: false },
      },
    }),
  )
  if (positionals.length)
    throw new UsageError(`init takes no arguments, got '${positionals[0]}' (use -o PATH)`)
  const path = values.output ?? "mycelium.yaml"
  // --full wins over --minimal, as in the original.
  const name: TemplateName = values.full ? "full" : values.minimal ? "minimal" : "quickstart"
  // A directory or a device is never overwritten, --force or not (a raw EISDIR, or a write into a FIFO that blocks).
  requireRegularFile(path, "init: -o")
  // lstat, not exists: a dangling symlink is something there too, and writing would create the file it points to.
  const there = lstatSync(path, { throwIfNoEntry: false })
  // --force replaces a file, never writes through a link: its target may be anywhere, or not exist yet.
  if (there?.isSymbolicLink())
    throw new CliError(`${path} is a symlink: remove it, or pass -o with the file it points to`)
  if (there && !values.force) throw new CliError(`${path} already exists (use --force to overwrite)`)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, TEMPLATES[name])
  console.log(`Wrote ${path} (${name} template)`)
  if (name === "minimal")
    console.log("Set the receipt signing key first: export MYCELIUM_SIGNING_KEY=$(openssl rand -hex 32)")
  console.log(
    name === "quickstart"
      ? "Next: fill in agent_id and policy_version, then in your agent:\n" +
          '  const config = await loadConfig("mycelium.yaml")   // from "mycelium-runtime/node/config"\n' +
          "  const tools = config.instrument({ subagent_task })\n" +
          `Try: ${CLI} demo`
      : "Next: edit the tool and task names, then loadConfig() in your agent code.",
  )
  console.log(dim(`Check it any time: ${CLI} doctor`))
  return 0
}
