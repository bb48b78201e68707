// A task under a durable ledger: its row holds the output and usage once it finishes, so a rerun of the same run
// id replays it instead of running it; an unfinished task runs again, replaying whatever requests it finished.
import type { ActionLedger } from "../ledger/index.ts"
import { type AgentContext, runAgent } from "./agent.ts"
import type { RunUsage } from "./types.ts"
import type { UsageAccumulator } from "./usage.ts"

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
    const stored = prior.result as unknown as { output: string; usage: RunUsage }
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
