// `mycelium transitions list|show|release|mark-dead`: an operator's view of the action ledger and their verdicts.
import {
  type ActionLedger,
  type LedgerEntry,
  LedgerError,
  LedgerStorageUnavailableError,
  LedgerWorkerAliveError,
  ReceiptAppendError,
  resolvedOutcome,
} from "../../core/ledger/index.ts"
import { entryToRow, leaseLapsed } from "../../core/ledger/model/entry.ts"
import { CliError, UsageError } from "../errors.ts"
import {
  type LedgerAccess,
  type OpenLedgerOptions,
  openLedger,
  STORE_HELP,
  STORE_OPTIONS,
  shellQuote,
  storeFlagsText,
} from "../ledger-access.ts"
import { blank, DEFAULT_LEDGER, parseOrUsage, parseResultJson } from "../options.ts"
import {
  bold,
  clean,
  clip,
  digestOf,
  dim,
  displayedAs,
  green,
  looksClipped,
  printJson,
  red,
  SHOWN_CHARS,
  shown,
  VALUE_CHARS,
  yellow,
} from "../style.ts"

export const HELP = `mycelium transitions <list|show|release|mark-dead> [options]

  list [--stuck] [--tool NAME] [--json]        every transition (stuck: waiting for a human or a reconciler)
  show ID [--json]                             one transition, every field
  release ID --verified completed|not-executed --by WHO --reason TEXT [--result-json JSON]
          [--override-death-signal WHY] [--fence N] [--force]
                                               an operator's verdict on a stuck transition (runs at most once);
                                               not-executed on a lapsed lease needs the owner's death signal
                                               (heartbeat silence, mark-dead) or WHY it can no longer act;
                                               --force: an IN_FLIGHT row on an unbounded lease, once mark-dead
  mark-dead ID --by WHO --reason TEXT [--override-heartbeat] [--fence N]
                                               assert the worker holding ID is dead, so its lease may be reclaimed
  --fence N: the fence that show printed; refused if another attempt claimed the transition since

${STORE_HELP}

exit codes: 0 done, 1 refused by the ledger, 2 usage or config error`

const iso = (t: number | null): string =>
  t === null ? "-" : `${new Date(t * 1000).toISOString().slice(0, 19)}Z`

function age(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)}s`
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h`
  return `${Math.round(seconds / 86400)}d`
}

const paintOutcome = (o: string): string =>
  o === "COMPLETED"
    ? green(o)
    : o === "IN_FLIGHT"
      ? o
      : o === "EXPIRED" || o === "FAILED_BEFORE_EFFECT"
        ? yellow(o)
        : red(o)

/**
 * What an operator does next with a stuck row, as commands on the store the listing used (`store`: its flags).
 * A worker that may still run can charge after the provider was read, so its death is confirmed first, the provider
 * read after (kill-safety.md): a read taken while it lived, then a release, paid twice.
 */
function nextStep(e: LedgerEntry, outcome: string, now: number, store: string): string {
  if (e.operatorResolution === "not_executed")
    return `released as not executed by ${clip(e.resolvedBy ?? "an operator")}: the next redispatch runs it once more`
  if (shellQuote(e.requestId) === null)
    return "its id holds a NUL character, which no command line can pass: settle it through the HTTP API (POST /v1/transitions/{id}/mark-worker-dead, then release) or ActionLedger"
  const id = argWord(e.requestId)
  const ref = e.externalOperationRef ? ` (provider ref ${clip(e.externalOperationRef)})` : ""
  const inFlight = outcome === "IN_FLIGHT"
  // An unbounded lease never lapses: once its worker is marked dead, only --force releases the row.
  const force = inFlight && e.leaseUntil === null ? " --force" : ""
  // Its silence never counts as death either: mark-dead needs the override there.
  const override = force ? " --override-heartbeat" : " [--override-heartbeat]"
  const verify = `${inFlight && !force ? "once it is EXPIRED, " : ""}verify with the provider${ref}, then: ${withId("release", e.requestId, id, ` --fence ${e.fence} --verified completed|not-executed --by you --reason ...${force}${store}`)}`
  const long =
    id === LONG_ID
      ? `${longIdNote(e.requestId, `its request_id in mycelium transitions list --stuck --json${store}, the one whose sha256 starts ${digestOf(e.requestId)}`)}: `
      : ""
  if ((inFlight || leaseLapsed(e, now)) && e.workerDeadAssertedAt === null)
    return `${long}first confirm the worker is dead: ${withId("mark-dead", e.requestId, id, ` --fence ${e.fence} --by you --reason "how you know it is dead"${store}${override}`)}; then ${verify}`
  return long + verify
}

// A hint's stand-in for an id too long to print (a `requestIdFrom` argument can be any length): the operator sets
// ID to it, from the listing's --json (the printed digest tells two ids cut alike apart) or the command line they
// typed.
const LONG_ID = '"$ID"'
const longIdNote = (id: string, from: string): string =>
  `its id is ${id.length} characters, too long to print: set ID to it (${from})`

/**
 * `mycelium transitions SUB` for the id `id` (its shell word `word`) with `flags` (text from a space). An id starting
 * with '-' goes last, after `--`: before the flags parseArgs read it as one (`mark-dead -x --fence 1` was a usage
 * error when pasted), and the shell's quotes do not tell it apart.
 */
const withId = (sub: string, id: string, word: string, flags: string): string =>
  id.startsWith("-")
    ? `mycelium transitions ${sub}${flags} -- ${word}`
    : `mycelium transitions ${sub} ${word}${flags}`

/** Where a flag the operator adds goes on a command line that ends in `-- ID` (after it, it is a second id). */
const beforeId = (id: string): string => (id.startsWith("-") ? " before the --" : "")

function json(e: LedgerEntry, now: number): Record<string, unknown> {
  return {
    ...entryToRow(e),
    resolved_outcome: resolvedOutcome(e, now),
    age_seconds: Math.max(0, now - e.startedAt),
  }
}

async function withLedger<T>(
  flags: Record<string, unknown>,
  fn: (a: LedgerAccess) => Promise<T>,
  options: OpenLedgerOptions = {},
): Promise<T> {
  const access = await openLedger(flags, {}, options)
  try {
    return await fn(access)
  } finally {
    await access.close()
  }
}

async function list(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("transitions list", {
    args,
    allowPositionals: true,
    options: {
      ...STORE_OPTIONS,
      stuck: { type: "boolean", default: false },
      tool: { type: "string" },
      json: { type: "boolean", default: false },
    },
  })
  if (positionals.length) throw new UsageError(`transitions list takes no arguments, got '${positionals[0]}'`)
  const store = storeFlagsText(values)
  return withLedger(values, async ({ ledger, where }) => {
    const rows = await ledger.listTransitions({
      stuck: values.stuck,
      ...(values.tool && { tool: values.tool }),
    })
    const now = ledger.clock.now()
    if (values.json) {
      printJson(rows.map((e) => json(e, now)))
      return 0
    }
    if (!rows.length) {
      console.log(`no transitions found${values.stuck ? " (stuck only)" : ""} in ${clean(where)}`)
      if (where === `file ${DEFAULT_LEDGER}`)
        console.log(
          dim("(mycelium demo writes .mycelium/demo-ledger.json: add --file .mycelium/demo-ledger.json)"),
        )
      return 0
    }
    for (const e of rows) {
      const outcome = resolvedOutcome(e, now)
      const released = e.operatorResolution
        ? `  [released: ${shown(e.operatorResolution)} by ${shown(e.resolvedBy)}]`
        : ""
      const parent = e.parentRequestId ? `  parent=${shown(e.parentRequestId)}` : ""
      console.log(
        `${bold(clip(e.requestId))}  ${shown(e.tool)}  ${paintOutcome(outcome)}  age=${age(now - e.startedAt)}${parent}${released}`,
      )
      if (values.stuck) console.log(dim(`    next: ${nextStep(e, outcome, now, store.text)}`))
    }
    if (values.stuck && store.hidden) console.log(dim(HIDDEN_NOTE))
    return 0
  })
}

const HIDDEN_NOTE = "(the commands above show the store's password as ***: put it back before running them)"

function oneId(command: string, positionals: string[]): string {
  const [id, ...extra] = positionals
  if (!id) throw new UsageError(`transitions ${command} needs a request id`)
  if (extra.length)
    throw new UsageError(`transitions ${command} takes one request id, got also '${extra[0]}'`)
  return id
}

async function show(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("transitions show", {
    args,
    allowPositionals: true,
    options: { ...STORE_OPTIONS, json: { type: "boolean", default: false } },
  })
  const id = oneId("show", positionals)
  return withLedger(values, async ({ ledger, where }) => {
    await refuseDisplayed(ledger, id, storeFlagsText(values).text)
    const e = await ledger.get(id)
    if (!e) throw new CliError(`no transition '${clip(id)}' in ${where}`)
    const now = ledger.clock.now()
    if (values.json) {
      printJson(json(e, now))
      return 0
    }
    const fields: [string, unknown][] = [
      ["request_id", e.requestId],
      ["tool", e.tool],
      ["args", JSON.stringify(e.kwargs)],
      ["status", e.status],
      ["resolved_outcome", resolvedOutcome(e, now)],
      ["side_effect_boundary", e.sideEffectBoundary],
      ["parent_request_id", e.parentRequestId ?? "-"],
      ["started_at", iso(e.startedAt)],
      ["finished_at", iso(e.finishedAt)],
      ["lease_until", iso(e.leaseUntil)],
      ["owner", e.owner ?? "-"],
      ["fence", e.fence],
      ["idempotency_key", e.idempotencyKey],
      ["provider_idempotency_key", e.providerIdempotencyKey ?? "-"],
      ["external_operation_ref", e.externalOperationRef ?? "-"],
      ["error", e.error ?? "-"],
      ["result", JSON.stringify(e.result) ?? "-"],
      ["receipt_ref", e.receiptRef ?? "-"],
      ["operator_resolution", e.operatorResolution ?? "-"],
      ["resolved_by", e.resolvedBy ?? "-"],
      ["resolution_reason", e.resolutionReason ?? "-"],
      ["resolved_at", iso(e.resolvedAt)],
      ["released_from_outcome", e.releasedFromOutcome ?? "-"],
      ["last_heartbeat_at", iso(e.lastHeartbeatAt)],
      ["worker_dead_asserted_by", e.workerDeadAssertedBy ?? "-"],
      ["worker_dead_asserted_at", iso(e.workerDeadAssertedAt)],
    ]
    // The outcome is painted here, after clean(): cleaned again, its colour codes would print as text. Arguments,
    // result and error are read more of; --json prints every field whole.
    for (const [k, v] of fields)
      console.log(
        `${k}: ${k === "resolved_outcome" ? paintOutcome(String(v)) : shown(v, VALUE_FIELDS.has(k) ? VALUE_CHARS : SHOWN_CHARS)}`,
      )
    return 0
  })
}

const VALUE_FIELDS: ReadonlySet<string> = new Set(["args", "result", "error"])

const VERDICTS: Record<string, "completed" | "not_executed"> = {
  completed: "completed",
  "not-executed": "not_executed",
  not_executed: "not_executed",
}

export async function release(args: string[], command = "transitions release"): Promise<number> {
  const { values, positionals } = parseOrUsage(command, {
    args,
    allowPositionals: true,
    options: {
      ...STORE_OPTIONS,
      verified: { type: "string" },
      by: { type: "string" },
      reason: { type: "string" },
      "result-json": { type: "string" },
      "override-death-signal": { type: "string" },
      fence: { type: "string" },
      force: { type: "boolean", default: false },
    },
  })
  const id = oneId("release", positionals)
  const expectedFence = fenceOf(command, values.fence)
  // An own key only: `constructor` or `toString` would find the object's prototype.
  const verified = Object.hasOwn(VERDICTS, values.verified ?? "")
    ? VERDICTS[values.verified ?? ""]
    : undefined
  if (!verified) throw new UsageError(`${command}: --verified must be completed or not-executed`)
  if (!values.by || !values.reason) throw new UsageError(`${command}: --by and --reason are required`)
  const override = values["override-death-signal"]
  // Invisible characters only (a zero-width space) say no more than blank text: String.trim() keeps them.
  if (override !== undefined && blank(override))
    throw new UsageError(`${command}: --override-death-signal must say why the owner can no longer act`)
  let result: unknown = null
  if (values["result-json"] !== undefined) {
    if (verified !== "completed")
      throw new UsageError(`${command}: --result-json goes with --verified completed only`)
    result = parseResultJson(command, values["result-json"])
  }
  return withLedger(
    values,
    async ({ ledger }) => {
      const fence = expectedFence !== undefined ? ` --fence ${expectedFence}` : ""
      const word = argWord(id)
      const long = word === LONG_ID ? ` (${longIdNote(id, "the one you passed")})` : ""
      await refuseDisplayed(ledger, id, storeFlagsText(values).text)
      const row = await refusals(
        () =>
          ledger.release(id, {
            verified,
            by: values.by as string,
            reason: values.reason as string,
            result,
            ...(override !== undefined ? { overrideDeathSignal: override } : {}),
            ...(expectedFence !== undefined ? { expectedFence } : {}),
            ...(values.force ? { force: true } : {}),
          }),
        `once it is dead, ${withId("mark-dead", id, word, `${fence} --by you --reason "how you know it is dead"${storeFlagsText(values).text} [--override-heartbeat]`)}` +
          `${long}, or add --override-death-signal WHY${beforeId(id)}; read the provider after that, not before`,
      )
      console.log(
        `released ${shown(row.requestId)} (${shown(row.tool)}): verified=${verified} by=${shown(values.by)} from=${row.releasedFromOutcome}`,
      )
      console.log(
        dim(
          verified === "completed"
            ? "next: redispatches of this call now return the recorded result"
            : "next: the next redispatch runs the tool once more (exactly once)",
        ),
      )
      if (row.receiptRef) console.log(dim(`signed receipt ${row.receiptRef}`))
      return 0
    },
    { sign: true },
  )
}

/** An id read from argv as a shell word (argv never holds NUL, so it has one), or LONG_ID for one too long to print. */
function argWord(id: string): string {
  const w = shellQuote(id)
  if (w === null) throw new UsageError("the request id holds a NUL character, which no command line can pass")
  // The word, not the id: a short id of bidi or control characters is a `$'\xe2\x80\xae...'` word up to 12 times
  // as long, which a refusal's message, bounded, cut in its middle: pasted, it named another id.
  return w.length > SHOWN_CHARS ? LONG_ID : w
}

/**
 * An id pasted from a listing's clipped display is refused: a row's id may be that very text (a `requestIdFrom`
 * argument can be anything), and releasing it `--verified not-executed` ran another row's payment again. Only an
 * id of that shape costs a read of every row.
 */
async function refuseDisplayed(ledger: ActionLedger, id: string, store: string): Promise<void> {
  if (!looksClipped(id)) return
  const other = displayedAs(
    id,
    (await ledger.listTransitions()).map((e) => e.requestId),
  )
  if (other !== undefined)
    throw new CliError(
      `'${clip(id)}' is how the CLI prints the id of another transition (${other.length} characters, sha256 ` +
        `${digestOf(other)}), not an id: set ID to its request_id in mycelium transitions list --json${store} and pass "$ID"` +
        // After `--`, last: before it, an id starting with '-' reads as a flag.
        (other.startsWith("-") ? " last, after --" : ""),
    )
}

/** `--fence N`: a whole number, as `show` prints it. */
function fenceOf(command: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined
  if (!/^\d{1,15}$/.test(raw))
    throw new UsageError(`${command}: --fence must be a whole number, got '${raw}'`)
  return Number(raw)
}

async function markDead(args: string[]): Promise<number> {
  const { values, positionals } = parseOrUsage("transitions mark-dead", {
    args,
    allowPositionals: true,
    options: {
      ...STORE_OPTIONS,
      by: { type: "string" },
      reason: { type: "string" },
      "override-heartbeat": { type: "boolean", default: false },
      fence: { type: "string" },
    },
  })
  const id = oneId("mark-dead", positionals)
  const expectedFence = fenceOf("transitions mark-dead", values.fence)
  if (!values.by || !values.reason)
    throw new UsageError("transitions mark-dead: --by and --reason are required")
  const store = storeFlagsText(values).text
  return withLedger(values, async ({ ledger }) => {
    await refuseDisplayed(ledger, id, store)
    const row = await refusals(
      () =>
        ledger.markWorkerDeadFor(id, {
          by: values.by as string,
          reason: values.reason as string,
          overrideHeartbeat: values["override-heartbeat"],
          ...(expectedFence !== undefined ? { expectedFence } : {}),
        }),
      `add --override-heartbeat${beforeId(id)}`,
    )
    console.log(
      `marked the worker of ${shown(row.requestId)} (${shown(row.tool)}) dead: owner=${shown(row.owner ?? "-")} by=${shown(values.by)}`,
    )
    const force = resolvedOutcome(row, ledger.clock.now()) === "IN_FLIGHT" && row.leaseUntil === null
    const word = argWord(row.requestId)
    const long = word === LONG_ID ? ` (${longIdNote(row.requestId, "the one you passed")})` : ""
    console.log(
      dim(
        `next: verify with the provider, then: ${withId("release", row.requestId, word, ` --fence ${row.fence} --verified completed|not-executed --by you --reason ...${force ? " --force" : ""}${store}`)}${long}`,
      ),
    )
    return 0
  })
}

/**
 * A ledger refusal is the operator's answer (exit 1), not a crash. The ledger names the way past a live worker in
 * words of no surface; `alive` spells it as this command line's flags.
 */
async function refusals<T>(fn: () => Promise<T>, alive: string): Promise<T> {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof LedgerWorkerAliveError) throw new CliError(`refused: ${e.message} (CLI: ${alive})`)
    // A verdict recorded whose receipt was not stored is no refusal: told "refused", an operator settled it again.
    // Said as it is, not as the file it could not write (main.ts), which would leave out that it was recorded.
    if (e instanceof ReceiptAppendError) throw new CliError(e.message)
    // Nor is an outage, whose write may have landed: main.ts names it, or the path it could not use.
    if (e instanceof LedgerError && !(e instanceof LedgerStorageUnavailableError))
      throw new CliError(`refused: ${e.message}`)
    throw e
  }
}

const SUB: Record<string, (args: string[]) => Promise<number>> = {
  list,
  show,
  release: (a) => release(a),
  "mark-dead": markDead,
}

export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args
  // `mycelium transitions` and `mycelium transitions --stuck` keep listing, as before; a short flag (`-c PATH`) too,
  // or `-c` would be refused where `--config` works.
  if (sub === undefined || sub.startsWith("-")) return list(args)
  const fn = Object.hasOwn(SUB, sub) ? SUB[sub] : undefined
  if (!fn) throw new UsageError(`transitions: unknown subcommand '${sub}' (list, show, release, mark-dead)`)
  return fn(rest)
}
