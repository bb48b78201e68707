// `mycelium tasks list|show|release`: an operator's view of the task ledger (a task-ledger file, or the
// task_ledger of mycelium.yaml when it is a file).
import { existsSync } from "node:fs"
import { parseArgs } from "node:util"
import { LedgerError } from "../../core/ledger/index.ts"
import { taskState } from "../../core/tasks/record.ts"
import { CliError, UsageError } from "../errors.ts"
import { parseOrUsage } from "../options.ts"
import { bold, dim, printJson } from "../style.ts"

export const DEFAULT_TASKS = ".mycelium/tasks.json"

export const HELP = `mycelium tasks <list|show|release> [--file PATH | -c PATH] [options]

  list [--json]                                      every task and its state (live, expired, completed, failed)
  show ID [--json]                                   one task: the original's row and this port's lease beside it
  release ID --verified completed|not-executed --by WHO --reason TEXT [--result-json JSON] [--force]
                                                     settle a stuck task (refused while a live lease holds it,
                                                     unless --force)
store: --file PATH (env MYCELIUM_TASK_FILE), else the task_ledger of mycelium.yaml (-c), else ${DEFAULT_TASKS}
exit codes: 0 done, 1 refused, 2 usage or config error`

const OPTIONS = {
  config: { type: "string", short: "c" },
  file: { type: "string" },
  json: { type: "boolean", default: false },
  verified: { type: "string" },
  by: { type: "string" },
  reason: { type: "string" },
  "result-json": { type: "string" },
  force: { type: "boolean", default: false },
} as const

async function taskFile(values: { config?: string | undefined; file?: string | undefined }): Promise<string> {
  const direct = values.file ?? process.env.MYCELIUM_TASK_FILE
  if (direct) return direct
  const path = values.config ?? (existsSync("mycelium.yaml") ? "mycelium.yaml" : undefined)
  if (!path) return DEFAULT_TASKS
  const { loadConfig } = await import("../../node/config.ts")
  const config = await loadConfig(path, { onWarning: () => {} })
  const tl = config.resolved.raw.task_ledger
  if (!tl) throw new UsageError(`${path} has no task_ledger section: pass --file`)
  if (tl.storage !== "file" || !tl.path)
    throw new UsageError(`the CLI reads task ledgers in files; ${path} uses storage '${tl.storage}'`)
  return tl.path
}

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== "list" && sub !== "show" && sub !== "release")
    throw new UsageError(`tasks: expected list, show or release${sub ? `, got '${sub}'` : ""}`)
  const { values, positionals } = parseOrUsage(`tasks ${sub}`, () =>
    parseArgs({ args: rest, allowPositionals: true, options: OPTIONS }),
  )
  const path = await taskFile(values)
  const { FileTaskStore } = await import("../../adapters/file-tasks.ts")
  const { TaskLedger } = await import("../../core/tasks/index.ts")
  const storage = new FileTaskStore(path)
  const ledger = new TaskLedger({ storage, owner: "mycelium-cli" })
  const now = Date.now() / 1000
  if (sub === "list") {
    if (positionals.length) throw new UsageError("tasks list takes no arguments")
    const tasks = await ledger.list()
    if (values.json) printJson(tasks.map((t) => ({ ...t.row, state: taskState(t, now), lease: t.lease })))
    else if (!tasks.length) console.log(`no tasks found in ${path}`)
    else for (const t of tasks) console.log(`${bold(t.row.request_id)}  ${t.row.task}  ${taskState(t, now)}`)
    return 0
  }
  const [id, ...extra] = positionals
  if (!id || extra.length) throw new UsageError(`tasks ${sub} needs exactly one task id`)
  if (sub === "show") {
    const t = await ledger.get(id)
    if (!t) throw new CliError(`no task '${id}' in ${path}`)
    if (values.json) printJson({ ...t.row, state: taskState(t, now), lease: t.lease })
    else {
      for (const [k, v] of Object.entries(t.row))
        console.log(`${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
      console.log(`state: ${taskState(t, now)}`)
      console.log(`lease: ${t.lease ? JSON.stringify(t.lease) : "-"}`)
    }
    return 0
  }
  const verified =
    values.verified === "completed"
      ? "completed"
      : /^not[-_]executed$/.test(values.verified ?? "")
        ? "not_executed"
        : null
  if (!verified) throw new UsageError("tasks release: --verified must be completed or not-executed")
  if (!values.by || !values.reason) throw new UsageError("tasks release: --by and --reason are required")
  let result: unknown = null
  if (values["result-json"] !== undefined) {
    if (verified !== "completed")
      throw new UsageError("tasks release: --result-json goes with --verified completed")
    try {
      result = JSON.parse(values["result-json"])
    } catch (e) {
      throw new UsageError(`tasks release: --result-json is not JSON (${(e as Error).message})`)
    }
  }
  try {
    await ledger.release(id, { verified, by: values.by, reason: values.reason, result, force: values.force })
  } catch (e) {
    if (e instanceof LedgerError) throw new CliError(`refused: ${e.message}`)
    throw e
  }
  console.log(`released task ${id}: verified=${verified} by=${values.by}`)
  console.log(
    dim(
      verified === "completed"
        ? "next: later calls get the recorded result"
        : "next: the next call runs the task once more",
    ),
  )
  return 0
}
