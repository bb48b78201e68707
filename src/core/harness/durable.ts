// A task under a durable ledger: its row holds the output and usage once it finishes, so a rerun of the same run
// id replays it instead of running it; an unfinished task runs again, replaying whatever requests it finished.
import { LedgerStorageUnavailableError } from "../ledger/errors.ts"
import type { ActionLedger } from "../ledger/index.ts"
import type { LedgerEntry } from "../ledger/model/entry.ts"
import { sha256Hex } from "../ledger/model/sha256.ts"
import { storeFailure } from "../storage/store-failure.ts"
import { type AgentContext, MODEL_REQUEST, NOT_RUN, ownField, runAgent } from "./agent.ts"
import type { BudgetLedger } from "./budget.ts"
import { HarnessError } from "./errors.ts"
import type { RunUsage } from "./types.ts"
import { reportedUsage, USAGE_COUNTERS, type UsageAccumulator, type UsageCounter } from "./usage.ts"

// '/' separates a durable key's parts (`<run>/<task>/r<step>/c<call>`), so a task id "a/r0" would name task a's first
// request row and replay it as a task. Escaping '/' (and '%', to keep the escape one-to-one) in the run and task ids
// keeps every key distinct; ids without either character keep the keys they always had.
const keyPart = (s: string): string => s.replace(/%/g, "%25").replace(/\//g, "%2F")

/** The durable key of a task's row: the prefix of its request, tool and sub-query rows. */
export function durableTaskKey(runId: string, taskId: string): string {
  return `${keyPart(runId)}/${keyPart(taskId)}`
}

const isTaskRow = (v: unknown): v is { output: string; usage: RunUsage } =>
  typeof v === "object" &&
  v !== null &&
  typeof (v as { output?: unknown }).output === "string" &&
  typeof (v as { usage?: unknown }).usage === "object"

// A task row's arguments: its id and a digest of its plan entry, so a run id reused with another prompt or other
// dependencies is refused instead of replaying the old answer. A digest, not the prompt: the prompt in the row made
// one too big for the store's rows, or holding U+0000, refuse a durable run that no row had held it for. Core's
// synchronous SHA-256, which the ledger a durable run is given already loads (Web Crypto's hop to a thread pool
// left fake-clock runs looking hung).
type PlanTask = { readonly task_id: string; readonly prompt: string; readonly depends_on: readonly string[] }
const planEntry = (t: PlanTask) => ({
  task_id: t.task_id,
  plan: sha256Hex(JSON.stringify([t.prompt, t.depends_on])),
})

/** `u` with every counter negated: adding it takes `u` back. */
function negated(u: Partial<RunUsage>): Partial<RunUsage> {
  const out: Partial<Record<UsageCounter, number>> & { details?: Record<string, number> } = {}
  for (const k of USAGE_COUNTERS) out[k] = -(u[k] ?? 0)
  if (u.details) out.details = Object.fromEntries(Object.entries(u.details).map(([k, v]) => [k, -v]))
  return out
}

/** Durable task: a finished task's output and usage replay from the ledger; an unfinished one runs (again). */
export async function runDurableTask(
  ctx: AgentContext,
  t: { readonly spec: { readonly task_id: string }; readonly usage: UsageAccumulator; replayed: boolean },
  prompt: string,
  started: () => void,
): Promise<string> {
  const ledger = ctx.shared.ledger as ActionLedger
  const key = ctx.key
  // The ledger refuses a claim with other arguments; a finished row is checked here.
  const entry = planEntry(ctx.task)
  let prior: Awaited<ReturnType<ActionLedger["get"]>>
  try {
    prior = await ledger.get(key)
  } catch (e) {
    // A store outage fails the task closed, after its start event (every terminal event follows a start).
    started()
    throw e
  }
  const done = prior?.terminalOutcome === "COMPLETED"
  const stored: unknown = prior?.result
  // A row of the version before rows held the plan has the task id alone, finished or not (the ledger's refusal of
  // an unfinished one says to mint a new id): a fresh run_id would run again what that run's tools already did.
  const old = prior?.tool === "harness.task" && !("plan" in prior.kwargs) && (!done || isTaskRow(stored))
  if (old || (done && (!isTaskRow(stored) || prior?.kwargs.plan !== entry.plan))) {
    started()
    throw new HarnessError(
      `the durable row '${key}' is not this task's result (${old ? "written before rows held the plan); finish it with the version that started it" : "another writer, or another plan under this run_id, used this key); use a fresh run_id"}`,
    )
  }
  if (done && isTaskRow(stored)) {
    t.replayed = true
    started()
    t.usage.add(stored.usage)
    const { precharged, budget } = ctx.shared
    if (!precharged.delete(key)) {
      budget.committed.add(stored.usage)
      // The row finished after the run listed it (another worker of this run): the requests charged then under the
      // unfinished task are in its stored usage, so they are taken back, not charged twice.
      for (const [k, u] of precharged)
        if (k.startsWith(`${key}/`)) {
          precharged.delete(k)
          budget.committed.add(negated(u))
        }
    }
    return stored.output
  }
  started()
  const body = ledger.tool(
    {
      name: "harness.task",
      binding: { agentId: "mycelium-harness", policyVersion: "1", sideEffectClass: "read" },
    },
    async () => {
      const output = await runAgent(ctx, prompt)
      return { output, usage: t.usage.snapshot() }
    },
  )
  const r = (await body(entry, { requestId: key, signal: ctx.signal })) as {
    output: string
    usage: RunUsage
  }
  return r.output
}

/**
 * Before a durable run's first task: charges the budget for every finished row it will replay (a finished task's
 * stored usage, which includes its requests; else each finished model request and tool call of the task and of its
 * sub-queries, as their replay charges it) and adds their keys to `charged`, so the replay adds them to the task's
 * usage only. Charged
 * when each row was read instead, a task that ran again before a finished task's row was read spent budget the replay
 * then added to: a resumed run ended over a limit the crashed run kept.
 */
export async function precharge(
  ledger: ActionLedger,
  runId: string,
  tasks: readonly PlanTask[],
  budget: BudgetLedger,
  charged: Map<string, Partial<RunUsage>>,
): Promise<void> {
  const prefix = `${keyPart(runId)}/`
  // Finished rows by the key of the plan task they belong to; rows of tasks not in this plan never replay.
  const rows = new Map(tasks.map((t): [string, LedgerEntry[]] => [durableTaskKey(runId, t.task_id), []]))
  try {
    // A task's row is claimed before any row under it, so a run none of whose tasks has one has nothing to replay:
    // a fresh run reads only these rows, never a listing (on Redis and Upstash a SCAN of the whole keyspace).
    const found = await Promise.all([...rows.keys()].map((k) => ledger.storage.get(k)))
    if (!found.some(Boolean)) return
    // A row of another plan fails its task at once: nothing of it replays (charged, it stopped the run on a limit
    // instead of failing the task that does not match).
    for (const [i, e] of found.entries())
      if (e && e.kwargs.plan !== planEntry(tasks[i] as PlanTask).plan) rows.delete(e.requestId)
    // One listing: each store pages it itself.
    for await (const e of ledger.storage.list({ prefix })) {
      const id = e.requestId
      const i = id.indexOf("/", prefix.length)
      if (e.terminalOutcome === "COMPLETED") rows.get(i < 0 ? id : id.slice(0, i))?.push(e)
    }
  } catch (e) {
    // Fails closed as a get() outage does.
    throw storeFailure("ledger storage", "list", e, LedgerStorageUnavailableError)
  }
  for (const [key, finished] of rows) {
    const task = finished.find((e) => e.requestId === key)
    if (task) {
      // A row that is no task result fails the task at once: nothing of it replays.
      if (isTaskRow(task.result)) {
        budget.committed.add(task.result.usage)
        charged.set(key, task.result.usage)
      }
      continue
    }
    for (const e of finished)
      if (e.tool === MODEL_REQUEST && /\/r\d+$/.test(e.requestId)) {
        const usage = reportedUsage((e.result as { usage?: unknown } | null)?.usage)
        budget.chargeReplay(usage)
        charged.set(e.requestId, { ...usage, requests: 1 })
      } else if (/\/r\d+\/c\d+$/.test(e.requestId)) {
        // A finished tool call counts toward tool_calls_limit as its batch's replay would have counted it, but for one
        // its boundary refused before its body ran. Listed either way, it reserves nothing when its batch replays.
        const n = ownField(e.result, NOT_RUN) ? 0 : 1
        budget.committed.inc("tool_calls", n)
        charged.set(e.requestId, { tool_calls: n })
      }
  }
}
