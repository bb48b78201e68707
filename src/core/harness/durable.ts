// A task under a durable ledger: its row holds the output and usage once it finishes, so a rerun of the same run
// id replays it instead of running it; an unfinished task runs again, replaying whatever requests it finished.
import { LedgerStorageUnavailableError } from "../ledger/errors.ts"
import type { ActionLedger } from "../ledger/index.ts"
import type { LedgerEntry } from "../ledger/model/entry.ts"
import { storeFailure } from "../storage/store-failure.ts"
import { type AgentContext, MODEL_REQUEST, runAgent } from "./agent.ts"
import type { BudgetLedger } from "./budget.ts"
import { HarnessError } from "./errors.ts"
import type { RunUsage } from "./types.ts"
import { reportedUsage, type UsageAccumulator } from "./usage.ts"

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

/** Durable task: a finished task's output and usage replay from the ledger; an unfinished one runs (again). */
export async function runDurableTask(
  ctx: AgentContext,
  t: { readonly spec: { readonly task_id: string }; readonly usage: UsageAccumulator; replayed: boolean },
  prompt: string,
  started: () => void,
): Promise<string> {
  const ledger = ctx.shared.ledger as ActionLedger
  const key = ctx.key
  let prior: Awaited<ReturnType<ActionLedger["get"]>>
  try {
    prior = await ledger.get(key)
  } catch (e) {
    // A store outage fails the task closed, after its start event (every terminal event follows a start).
    started()
    throw e
  }
  if (prior?.terminalOutcome === "COMPLETED") {
    const stored: unknown = prior.result
    if (!isTaskRow(stored)) {
      started()
      throw new HarnessError(
        `the durable row '${key}' is not a task's result (another writer used this key); use a fresh run_id`,
      )
    }
    t.replayed = true
    started()
    t.usage.add(stored.usage)
    if (!ctx.shared.precharged.delete(key)) ctx.shared.budget.committed.add(stored.usage)
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
  const r = (await body({ task_id: t.spec.task_id }, { requestId: key, signal: ctx.signal })) as {
    output: string
    usage: RunUsage
  }
  return r.output
}

/**
 * Before a durable run's first task: charges the budget for every finished row it will replay (a finished task's
 * stored usage, which includes its requests; else each finished model request of the task and of its sub-queries, as
 * their replay charges it) and adds their keys to `charged`, so the replay adds them to the task's usage only. Charged
 * when each row was read instead, a task that ran again before a finished task's row was read spent budget the replay
 * then added to: a resumed run ended over a limit the crashed run kept.
 */
export async function precharge(
  ledger: ActionLedger,
  runId: string,
  taskIds: readonly string[],
  budget: BudgetLedger,
  charged: Set<string>,
): Promise<void> {
  const prefix = `${keyPart(runId)}/`
  // Finished rows by the key of the plan task they belong to; rows of tasks not in this plan never replay.
  const rows = new Map(taskIds.map((id): [string, LedgerEntry[]] => [durableTaskKey(runId, id), []]))
  try {
    // A task's row is claimed before any row under it, so a run none of whose tasks has one has nothing to replay:
    // a fresh run reads only these rows, never a listing (on Redis and Upstash a SCAN of the whole keyspace).
    const found = await Promise.all([...rows.keys()].map((k) => ledger.storage.get(k)))
    if (!found.some(Boolean)) return
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
        charged.add(key)
      }
      continue
    }
    for (const e of finished)
      if (e.tool === MODEL_REQUEST && /\/r\d+$/.test(e.requestId)) {
        budget.chargeReplay(reportedUsage((e.result as { usage?: unknown } | null)?.usage))
        charged.add(e.requestId)
      }
  }
}
