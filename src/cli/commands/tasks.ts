// `mycelium tasks list|show|release`: an operator's view of the task ledger (a task-ledger file, a Redis or
// PostgreSQL task ledger, or the task_ledger of mycelium.yaml on any storage a Node process reaches).
import { existsSync } from "node:fs"
import type { MyceliumConfig, ResolvedStorage } from "../../core/config/index.ts"
import { LedgerError, ReceiptAppendError } from "../../core/ledger/index.ts"
import { TaskStoreUnavailableError } from "../../core/tasks/errors.ts"
import { taskState } from "../../core/tasks/record.ts"
import type { TaskLedger } from "../../core/tasks/task-ledger.ts"
import { CliError, UsageError } from "../errors.ts"
import { describeStore, namedBy, refuseStrayStoreFlags, storeVariable } from "../ledger-access.ts"
import {
  parseOrUsage,
  parseResultJson,
  postgresDsn,
  redisUrl,
  requireRegularFile,
  tableFlag,
} from "../options.ts"
import {
  bold,
  clean,
  clip,
  digestOf,
  dim,
  displayedAs,
  looksClipped,
  printJson,
  SHOWN_CHARS,
  shown,
  VALUE_CHARS,
} from "../style.ts"

export const DEFAULT_TASKS = ".mycelium/tasks.json"

export const HELP = `mycelium tasks <list|show|release> [store] [options]

  list [--json]                                      every task and its state (live, expired, completed, failed)
  show ID [--json]                                   one task: the original's row and this port's lease beside it
  release ID --verified completed|not-executed --by WHO --reason TEXT [--result-json JSON] [--force]
                                                     settle a stuck task (refused while a live lease holds it,
                                                     unless --force)
store (first that applies):
  --file PATH           a task-ledger file (env MYCELIUM_TASK_FILE) [--python-lock: Python workers use it now]
  --redis-url URL       redis:// or rediss:// [--prefix P, default mycelium:task:]
  --postgres-dsn DSN    PostgreSQL [--table T, default mycelium_task_ledger]
  -c, --config PATH     the task_ledger of mycelium.yaml, any storage but memory (default ./mycelium.yaml when it
                        exists): file, redis, upstash, postgres, neon
  otherwise             ${DEFAULT_TASKS}
exit codes: 0 done, 1 refused, 2 usage or config error`

const OPTIONS = {
  config: { type: "string", short: "c" },
  file: { type: "string" },
  "redis-url": { type: "string" },
  "postgres-dsn": { type: "string" },
  prefix: { type: "string" },
  table: { type: "string" },
  "python-lock": { type: "boolean" },
  json: { type: "boolean", default: false },
  verified: { type: "string" },
  by: { type: "string" },
  reason: { type: "string" },
  "result-json": { type: "string" },
  force: { type: "boolean", default: false },
} as const

interface TaskStoreFlags {
  config?: string | undefined
  file?: string | undefined
  "redis-url"?: string | undefined
  "postgres-dsn"?: string | undefined
  prefix?: string | undefined
  table?: string | undefined
  "python-lock"?: boolean | undefined
}

type Choice = { store: ResolvedStorage; config: MyceliumConfig | null }

/** The task store the flags, the environment or mycelium.yaml name (and the config, when it was read). */
async function taskStoreChoice(values: TaskStoreFlags): Promise<Choice> {
  const direct = directChoice(values)
  refuseStrayStoreFlags(values, direct)
  if (values["python-lock"] && direct?.kind !== "file")
    throw new UsageError(
      "--python-lock applies to a task file (--file); in mycelium.yaml set python_lock: true",
    )
  // As for `transitions`: with a store flag and -c, the flag names the store and the config gives the settings
  // (its receipt signing); the implicit ./mycelium.yaml is read only when no flag names a store.
  const path = values.config ?? (!direct && existsSync("mycelium.yaml") ? "mycelium.yaml" : undefined)
  if (!path) return { store: direct ?? { kind: "file", path: DEFAULT_TASKS }, config: null }
  const { loadConfig } = await import("../../node/config.ts")
  const config = await loadConfig(path, { onWarning: () => {} })
  return { store: direct ?? configuredStore(config, path), config }
}

// As for `transitions`: any store flag (-c included) beats the environment, so an exported MYCELIUM_TASK_FILE cannot
// redirect an explicit --redis-url, --postgres-dsn or -c to a file.
function directChoice(values: TaskStoreFlags): ResolvedStorage | null {
  const redis = values["redis-url"]
  const dsn = values["postgres-dsn"]
  const file =
    values.file ??
    (redis || dsn || values.config !== undefined ? undefined : storeVariable("MYCELIUM_TASK_FILE"))
  if (file) return { kind: "file", path: file, ...(values["python-lock"] && { pythonLock: true }) }
  if (redis)
    return namedBy(
      {
        kind: "redis",
        url: redisUrl(redis, "--redis-url"),
        ...(values.prefix !== undefined && { prefix: values.prefix }),
      },
      "--redis-url",
    )
  if (dsn)
    return namedBy(
      { kind: "postgres", dsn: postgresDsn(dsn, "--postgres-dsn"), ...tableFlag(values.table, 63) },
      "--postgres-dsn",
    )
  return null
}

function configuredStore(config: MyceliumConfig, path: string): ResolvedStorage {
  const stores = new Map<string, ResolvedStorage>()
  const add = (s: ResolvedStorage | null) => {
    if (s) stores.set(JSON.stringify(s), s)
  }
  add(config.resolved.taskLedger)
  for (const t of config.tasks.values()) add(t.ledger)
  if (stores.size === 0)
    throw new UsageError(`${path} has no task_ledger section and no ledgered task: pass --file`)
  if (stores.size > 1)
    throw new UsageError(
      `${path} keeps tasks on ${stores.size} different stores; name one with --file, --redis-url or --postgres-dsn`,
    )
  const choice = [...stores.values()][0] as ResolvedStorage
  if (choice.kind === "memory")
    throw new UsageError(
      `${path} keeps tasks in memory: a command line cannot reach another process's memory`,
    )
  return choice
}

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args
  if (sub !== "list" && sub !== "show" && sub !== "release")
    throw new UsageError(`tasks: expected list, show or release${sub ? `, got '${sub}'` : ""}`)
  const { values, positionals } = parseOrUsage(`tasks ${sub}`, {
    args: rest,
    allowPositionals: true,
    options: OPTIONS,
  })
  const { store: choice, config } = await taskStoreChoice(values)
  if (choice.kind === "file" && choice.path) requireRegularFile(choice.path, "the task file")
  const path = describeStore(choice, "mycelium_task_ledger")
  // An operator's release is signed like the workers' task outcomes when the config signs any task's receipts; a
  // missing key is the config's error (exit 2) before anything is written.
  const signs = sub === "release" && config !== null && [...config.tasks.values()].some((t) => t.auditReceipt)
  const receipts = signs && config ? await config.receipts() : null
  const { nodeTaskStoreFactory } = await import("../../node/config.ts")
  const { TaskLedger } = await import("../../core/tasks/index.ts")
  const storage = await nodeTaskStoreFactory(choice)
  const ledger = new TaskLedger({ storage, owner: "mycelium-cli", ...(receipts && { receipts }) })
  try {
    return await command(sub, ledger, path, values, positionals)
  } finally {
    await storage.close?.()
  }
}

const VALUE_FIELDS: ReadonlySet<string> = new Set(["args", "kwargs", "result", "error"])

async function command(
  sub: "list" | "show" | "release",
  ledger: TaskLedger,
  path: string,
  values: {
    json: boolean
    verified?: string | undefined
    by?: string | undefined
    reason?: string | undefined
    "result-json"?: string | undefined
    force: boolean
  },
  positionals: string[],
): Promise<number> {
  const now = Date.now() / 1000
  if (sub === "list") {
    if (positionals.length) throw new UsageError("tasks list takes no arguments")
    const tasks = await ledger.list()
    if (values.json) printJson(tasks.map((t) => ({ ...t.row, state: taskState(t, now), lease: t.lease })))
    else if (!tasks.length) console.log(`no tasks found in ${clean(path)}`)
    else
      for (const t of tasks)
        console.log(`${bold(clip(t.row.request_id))}  ${shown(t.row.task)}  ${taskState(t, now)}`)
    return 0
  }
  const [id, ...extra] = positionals
  if (!id || extra.length) throw new UsageError(`tasks ${sub} needs exactly one task id`)
  // A task id pasted from the list's clipped display may be another task's whole id: refused, as for transitions.
  const other = looksClipped(id)
    ? displayedAs(
        id,
        (await ledger.list()).map((t) => t.row.request_id),
      )
    : undefined
  if (other !== undefined)
    throw new CliError(
      `'${clip(id)}' is how the CLI prints the id of another task (${other.length} characters, sha256 ` +
        `${digestOf(other)}), not an id: set ID to its request_id in mycelium tasks list --json and pass "$ID"` +
        // After `--`, last: before it, an id starting with '-' reads as a flag.
        (other.startsWith("-") ? " last, after --" : ""),
    )
  if (sub === "show") {
    const t = await ledger.get(id)
    if (!t) throw new CliError(`no task '${clip(id)}' in ${path}`)
    if (values.json) printJson({ ...t.row, state: taskState(t, now), lease: t.lease })
    else {
      // Ids and names clipped as the list shows them, values (a result, an error) read further; --json prints all.
      for (const [k, v] of Object.entries(t.row))
        console.log(
          `${k}: ${shown(typeof v === "string" ? v : JSON.stringify(v), VALUE_FIELDS.has(k) ? VALUE_CHARS : SHOWN_CHARS)}`,
        )
      console.log(`state: ${taskState(t, now)}`)
      console.log(`lease: ${t.lease ? shown(JSON.stringify(t.lease), VALUE_CHARS) : "-"}`)
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
    result = parseResultJson("tasks release", values["result-json"])
  }
  try {
    await ledger.release(id, { verified, by: values.by, reason: values.reason, result, force: values.force })
  } catch (e) {
    // As for transitions: a release recorded without its stored receipt, or an outage, is no refusal.
    if (e instanceof ReceiptAppendError) throw new CliError(e.message)
    if (e instanceof LedgerError && !(e instanceof TaskStoreUnavailableError))
      throw new CliError(`refused: ${e.message}`)
    throw e
  }
  console.log(`released task ${shown(id)}: verified=${verified} by=${shown(values.by)}`)
  console.log(
    dim(
      verified === "completed"
        ? "next: later calls get the recorded result"
        : "next: the next call runs the task once more",
    ),
  )
  return 0
}
