// A task under a durable ledger: its row holds the output and usage once it finishes, so a rerun of the same run
// id replays it instead of running it; an unfinished task runs again, replaying whatever requests it finished.
import type { ActionLedger } from "../ledger/index.ts"
import { type AgentContext, runAgent } from "./agent.ts"
import { HarnessError } from "./errors.ts"
import type { RunUsage } from "./types.ts"
import type { UsageAccumulator } from "./usage.ts"

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
    ctx.shared.budget.committed.add(stored.usage)
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
