// `mycelium doctor`: read-only checks of mycelium.yaml and the stores it names. It never writes a row.
import { existsSync, statSync } from "node:fs"
import type { ResolvedStorage } from "../../core/config/index.ts"
import { storageTimeout } from "../../core/config/normalize.ts"
import type { LedgerStorage } from "../../core/ledger/index.ts"
import type { TaskStore } from "../../core/tasks/store.ts"
import { UsageError } from "../errors.ts"
import { describeStore, redactText } from "../ledger-access.ts"
import { parseOrUsage } from "../options.ts"
import { clean, clip, green, printJson, red, yellow } from "../style.ts"

export const HELP = `mycelium doctor [-c PATH] [--json] [--strict] [--no-connectivity] [--timeout SECONDS]

  loads mycelium.yaml (or PATH) and checks it: ledgered tools have a class, durable stores for side effects,
  identity and death-signal policies, and that each action- and task-ledger store answers a read (nothing is
  written; --timeout at most 3600).
exit codes: 0 healthy, 1 a check failed (or warned, with --strict), 2 the config does not load`

type Status = "PASS" | "WARN" | "FAIL"
interface Check {
  id: string
  status: Status
  message: string
}

const label = (s: Status): string => (s === "PASS" ? green(s) : s === "WARN" ? yellow(s) : red(s))

/**
 * The owner the Python original writes (`{hostname}:{pid}`); this package's default is `ts-<random>`. No control
 * character: a hostname has none, and the owner is printed.
 */
const PYTHON_OWNER = /^[^:\s\p{Cc}]+:\d+$/u
/** Rows read to look for a Python worker's: enough to see a mixed fleet, few enough for a quick check. */
const SAMPLE = 200
/** `--timeout` at most an hour: setTimeout fires at once past about 24.8 days, and a doctor run is a quick check. */
const MAX_TIMEOUT_S = 3600

/** A store opened for one read: an action ledger's storage or a task ledger's store. */
interface Probed {
  get(id: string): Promise<unknown>
  close?: () => unknown
}

/** `after`: more checks on an answering store, racing the same deadline (it rejects when that passes). */
async function probe<T extends Probed>(
  id: string,
  s: ResolvedStorage,
  timeoutMs: number,
  open: (s: ResolvedStorage) => Promise<T>,
  after?: (store: T, deadline: Promise<never>) => Promise<Check[]>,
): Promise<Check[]> {
  if (s.kind === "memory") return [{ id, status: "PASS", message: "in-process memory (nothing to reach)" }]
  let timer: ReturnType<typeof setTimeout> | undefined
  let store: T | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
  })
  // Handled here too: it may fire while the store is still being built, before anything races it.
  timeout.catch(() => {})
  try {
    // A file store reads synchronously, where no timeout can fire: a FIFO at its path held the process forever, and
    // /dev/zero was read until memory ran out.
    if (s.kind === "file" && s.path && statSync(s.path, { throwIfNoEntry: false })?.isFile() === false)
      return [
        { id, status: "FAIL", message: `${s.path} is not a regular file (a directory, FIFO or device)` },
      ]
    store = await open(probeLimit(s, timeoutMs / 1000))
    await Promise.race([store.get("mycelium-doctor-probe"), timeout])
    return [{ id, status: "PASS", message: "answered a read" }, ...((await after?.(store, timeout)) ?? [])]
  } catch (e) {
    return [{ id, status: "FAIL", message: e instanceof Error ? e.message : String(e) }]
  } finally {
    clearTimeout(timer)
    await (async () => store?.close?.())().catch(() => {})
  }
}

/** The args-drift check reads this package's dispatch index, which Python workers never write (docs/stores.md). */
function pythonRows(s: ResolvedStorage) {
  return async (store: LedgerStorage, deadline: Promise<never>): Promise<Check[]> => {
    if ((s.kind !== "redis" && s.kind !== "upstash") || s.dispatchLookup === "scan") return []
    const sample = async () => {
      for await (const row of store.list({ limit: SAMPLE }))
        if (row.owner && PYTHON_OWNER.test(row.owner)) return row.owner
      return null
    }
    const owner = await Promise.race([sample(), deadline]).catch(() => null)
    if (!owner) return []
    return [
      {
        id: `ledger.dispatch_lookup(${describeStore(s)})`,
        status: "WARN",
        message:
          `a Python worker claimed rows here (owner ${clip(owner)}): set dispatch_lookup: scan on this storage, or a ` +
          "tool-call id a Python worker ran is not refused when it comes back with other arguments",
      },
    ]
  }
}

/**
 * The store as configured, its request limit cut to the probe's: a store left waiting on its own limit (30 s by
 * default) would hold the process that long after the probe gave up, and a failed probe must still close it.
 */
function probeLimit(s: ResolvedStorage, seconds: number): ResolvedStorage {
  const own = storageTimeout(s)
  if (own === undefined) return s
  return { ...s, timeout: own === null ? seconds : Math.min(own, seconds) }
}

/** What the python_lock check reads of a store choice: the ledgers', the task ledgers', receipts' and state's. */
type FileChoice = Pick<ResolvedStorage, "path" | "pythonLock"> & { readonly kind: string }

/**
 * The original creates `<path>.lock` beside every file it writes (its flock) and never removes it; this package
 * creates it only with `python_lock`. So a file store without `python_lock` that has one was written by a Python
 * worker, and if those still run at the same time, each side can undo the other's writes.
 */
function pythonLockChecks(stores: (FileChoice | null | undefined)[]): Check[] {
  return stores
    .filter((s): s is FileChoice => s?.kind === "file" && !s.pythonLock && existsSync(`${s.path}.lock`))
    .map((s) => ({
      id: `file.python_lock(${s.path})`,
      status: "WARN",
      message:
        `a Python worker has written ${s.path} (its ${s.path}.lock exists): if Python workers use it while this ` +
        "package does, set python_lock: true on that storage, or the two can undo each other's writes",
    }))
}

/** The distinct store choices among `stores` (by value: two tools on one file are one store). */
function distinct(stores: (ResolvedStorage | null | undefined)[]): ResolvedStorage[] {
  return [...new Map(stores.filter((x) => x != null).map((x) => [JSON.stringify(x), x])).values()]
}

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("doctor", {
    args,
    allowPositionals: true,
    options: {
      config: { type: "string", short: "c" },
      json: { type: "boolean", default: false },
      strict: { type: "boolean", default: false },
      "no-connectivity": { type: "boolean", default: false },
      timeout: { type: "string" },
    },
  })
  if (positionals.length) throw new UsageError(`doctor takes no arguments, got '${positionals[0]}'`)
  const timeoutMs = Math.round(Number(values.timeout ?? "2") * 1000)
  // A plain decimal, as `receipts export --timeout` takes: Number() also reads "0x10" as 16 and "1e1" or " 5" too.
  if (!(/^\d*\.?\d+$/.test(values.timeout ?? "2") && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_S * 1000))
    throw new UsageError(
      `--timeout must be a positive number of seconds, at most ${MAX_TIMEOUT_S}, got '${values.timeout}'`,
    )
  const { loadConfig } = await import("../../node/config.ts")
  const path = values.config ?? "mycelium.yaml"
  // A config that does not load is a ConfigError: exit 2 with its key, line and column (main.ts prints it).
  const config = await loadConfig(path, { onWarning: () => {} })
  const checks: Check[] = [
    { id: "config.load", status: "PASS", message: `${path} loads (profile ${config.profile})` },
  ]
  const ledgered = [...config.tools.values()].filter((t) => t.ledger)
  checks.push(
    config.transition
      ? {
          id: "transition",
          status: "PASS",
          message: `agent ${config.transition.agentId}, policy ${config.transition.policyVersion}`,
        }
      : {
          id: "transition",
          status: ledgered.length ? "WARN" : "PASS",
          message: ledgered.length
            ? "no transition: section: ledgered tools are unclassified (legacy dedupe, no class-aware gates)"
            : "no transition: section (no ledgered tools)",
        },
  )
  for (const w of config.warnings) checks.push({ id: "ledger.durability", status: "WARN", message: w })
  const mutating = ledgered.filter((t) => t.binding && t.binding.sideEffectClass !== "read")
  if (mutating.length && mutating.some((t) => t.ledger?.requestIdentityPolicy === "derived"))
    checks.push({
      id: "identity.policy",
      status: "WARN",
      message:
        "request_identity_policy is derived: a side-effecting call without a tool call id is keyed by its arguments " +
        "(set action_ledger.request_identity_policy: require_explicit to refuse such calls)",
    })
  if (config.transition && !config.transition.reclaimRequiresDeathSignal)
    checks.push({
      id: "lease.death_signal",
      status: "WARN",
      message:
        "reclaim_requires_death_signal is false: a lapsed lease is reclaimed without evidence the worker died",
    })
  const stores = distinct(ledgered.map((t) => t.ledger?.storage))
  // The task ledger too: tasks on a store that is down fail at run time as surely as tools do.
  const taskStores = distinct([
    config.resolved.taskLedger,
    ...[...config.tasks.values()].map((t) => t.ledger),
  ])
  // The receipt and state files too: the original flocks them alike.
  const { audit_receipt: ar, state_flush: sf } = config.resolved.raw
  const sectionStores = [ar, sf].map(
    (s) => s && { kind: s.storage, path: s.path, pythonLock: s.python_lock },
  ) as (FileChoice | undefined)[]
  checks.push(...pythonLockChecks([...stores, ...taskStores, ...sectionStores]))
  if (!values["no-connectivity"]) {
    for (const s of stores)
      checks.push(
        ...(await probe(
          `ledger.connectivity(${describeStore(s)})`,
          s,
          timeoutMs,
          (c) => config.storage(c),
          pythonRows(s),
        )),
      )
    for (const s of taskStores)
      checks.push(
        ...(await probe(
          `ledger.connectivity(task_ledger ${describeStore(s, "mycelium_task_ledger")})`,
          s,
          timeoutMs,
          (c) => config.taskStore(c) as Promise<TaskStore & { close?: () => unknown }>,
        )),
      )
  }
  // A store client's message may quote its URL with the password (@upstash/redis does): hidden like describeStore's.
  for (const c of checks) c.message = redactText(c.message)
  if (values.json) printJson(checks)
  // Ids and messages quote the config and stored rows (an owner, a path): printed inert like every row elsewhere.
  else
    for (const c of checks) console.log(`${label(c.status).padEnd(4)}  ${clean(c.id)}  ${clean(c.message)}`)
  const failed = checks.some((c) => c.status === "FAIL")
  const warned = checks.some((c) => c.status === "WARN")
  return failed || (values.strict && warned) ? 1 : 0
}
