// `mycelium init`: writes a mycelium.yaml that loads as written.
import {
  chmodSync,
  closeSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs"
import { basename, dirname, join, relative, resolve, sep } from "node:path"
import { CliError, UsageError } from "../errors.ts"
import { parseOrUsage, requireRegularFile } from "../options.ts"
import { CLI, dim } from "../style.ts"
import { SCHEMA_REF, TEMPLATES, type TemplateName } from "../templates.ts"

export const HELP = `mycelium init [-o PATH] [--minimal | --full] [--force]

  writes mycelium.yaml (or PATH):
    (default)   quickstart: one tool that must never run twice, on a file ledger
    --minimal   several guards: a ledgered delete, a deduplicated task, state flush, signed receipts
    --full      every section, with typical values (a comment names the default where it differs)
  --force       overwrite an existing file`

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("init", {
    args,
    allowPositionals: true,
    options: {
      output: { type: "string", short: "o" },
      full: { type: "boolean", default: false },
      minimal: { type: "boolean", default: false },
      force: { type: "boolean", default: false },
    },
  })
  if (positionals.length)
    throw new UsageError(`init takes no arguments, got '${positionals[0]}' (use -o PATH)`)
  const path = values.output ?? "mycelium.yaml"
  // --full wins over --minimal, as in the original.
  const name: TemplateName = values.full ? "full" : values.minimal ? "minimal" : "quickstart"
  // A folder's name (`newdir/`, `a/..`) that does not exist yet: written into as a file name, it failed as a raw
  // ENOENT (exit 1) that read as a missing folder, not as the wrong kind of path.
  if (path.endsWith("/") || path.endsWith(sep) || [".", ".."].includes(basename(path)))
    throw new UsageError(
      `init: -o ${path} names a folder: -o takes a file path, e.g. ${join(path, "mycelium.yaml")}`,
    )
  // A directory or a device is never overwritten, --force or not (a raw EISDIR, or a write into a FIFO that blocks).
  requireRegularFile(path, "init: -o")
  // lstat, not exists: a dangling symlink is something there too, and writing would create the file it points to.
  const there = lstatSync(path, { throwIfNoEntry: false })
  // --force replaces a file, never writes through a link: its target may be anywhere, or not exist yet.
  if (there?.isSymbolicLink())
    throw new CliError(`${path} is a symlink: remove it, or pass -o with the file it points to`)
  if (there && !values.force) throw exists(path)
  mkdirSync(dirname(path), { recursive: true })
  // Whole or not at all: written in place, --force over a config cut short by a crash or a full disk left half a
  // file. So a new file is renamed over it ("wx": nothing at that name is written through), after the old one is
  // opened for writing as before: a file the user may not write is refused, not replaced.
  if (there) closeSync(openSync(path, "r+"))
  const partial = `${path}.partial-${process.pid}`
  const text = TEMPLATES[name].replace(SCHEMA_REF, schemaRef(path))
  try {
    writeFileSync(partial, text, { flag: "wx", mode: there ? there.mode & 0o777 : 0o666 })
    // The old file's mode exactly: the umask took bits off the one created (a group-writable 660 became 640).
    if (there) chmodSync(partial, there.mode & 0o777)
    if (values.force) renameSync(partial, path)
    else placeNew(partial, path, text)
  } catch (e) {
    const err = e as { code?: string; path?: string }
    if (err.code !== "EEXIST") rmSync(partial, { force: true })
    // The folder refused it: named by the path the user gave.
    if (err.path === partial) err.path = path
    throw e
  }
  console.log(`Wrote ${path} (${name} template)`)
  if (name === "minimal")
    console.log("Set the receipt signing key first: export MYCELIUM_SIGNING_KEY=$(openssl rand -hex 32)")
  // The hints name the file written: loadConfig("mycelium.yaml") or a bare doctor would read another one, or none.
  const atRoot = resolve(path) === resolve("mycelium.yaml")
  const load = `loadConfig(${JSON.stringify(path)})`
  console.log(
    name === "quickstart"
      ? "Next: fill in agent_id and policy_version, then in your agent:\n" +
          `  const config = await ${load}   // from "mycelium-runtime/node/config"\n` +
          "  const tools = config.instrument({ subagent_task })\n" +
          `Try: ${CLI} demo`
      : `Next: edit the tool and task names, then ${atRoot ? "loadConfig()" : load} in your agent code.`,
  )
  console.log(dim(`Check it any time: ${CLI} doctor${atRoot ? "" : ` -c ${shellWord(path)}`}`))
  return 0
}

const exists = (path: string): CliError => new CliError(`${path} already exists (use --force to overwrite)`)

const taken = (e: unknown): boolean => (e as { code?: string }).code === "EEXIST"

/**
 * `partial` (holding `text`) put at `path` unless that name is taken, then removed. Without --force nothing there is
 * replaced, not even a file created after the check (another init, an editor's save), which a rename replaced: a
 * link fails on a taken name, and holds the file whole. Where there are no hard links (FAT, exFAT, some network
 * mounts) the file is created only if absent ("wx"), and removed if its text could not all be written.
 */
function placeNew(partial: string, path: string, text: string): void {
  try {
    linkSync(partial, path)
  } catch (e) {
    if (taken(e)) throw exists(path)
    let fd: number
    try {
      fd = openSync(path, "wx", 0o666)
    } catch (e2) {
      throw taken(e2) ? exists(path) : e2
    }
    try {
      writeFileSync(fd, text)
    } catch (e2) {
      closeSync(fd)
      rmSync(path, { force: true })
      throw e2
    }
    closeSync(fd)
  }
  rmSync(partial)
}

const shellWord = (s: string): string => (/^[\w./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`)

/**
 * The schema's path from the file written: its project is the nearest folder above it holding
 * node_modules/mycelium-runtime or a package.json. None found: the root-relative path, as before.
 */
function schemaRef(path: string): string {
  const from = dirname(resolve(path))
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, "node_modules", "mycelium-runtime")
    if (existsSync(pkg) || existsSync(join(dir, "package.json"))) {
      const rel = relative(from, join(pkg, "schemas", "mycelium.schema.json"))
        .split(sep)
        .join("/")
      return rel.startsWith("..") ? rel : `./${rel}`
    }
    if (dirname(dir) === dir) return SCHEMA_REF
  }
}
