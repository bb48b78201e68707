// Found by property-chaos.test.ts: the task whose sub-query stops the run is not itself aborted, so its other work
// (a second rlm_query of the same batch) went on until the refusal had travelled back up to the batch. On a durable
// run that takes the store's write of the refused row: a sibling sub-query whose answer landed meanwhile ran its tool
// after the run had stopped.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelResponse,
  RunFailed,
  rlmQueryTool,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import type { LedgerStorage } from "../../../src/core/storage/contract.ts"
import { ManualClock } from "../../../src/testing.ts"
import { delayedStore, task } from "./helpers.ts"

const call = (name: string, args: Record<string, unknown> = {}, id = name) => ({
  type: "tool_call" as const,
  id,
  name,
  args,
})
const aborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  )

/** A store whose calls about sub-query A's rows (`…/q0…`) take longer, as one round trip can. */
const slowForA = (store: MemoryLedgerStorage): LedgerStorage =>
  delayedStore(store, (id) => (id.includes("/c0/q0") ? 20 : 0))

describe("a stop caused by a task's own sub-query", () => {
  it("stops that task's other sub-queries too: none starts a tool after the run stopped", async () => {
    let stopped = false
    let onStop: () => void = () => {}
    const stop = new Promise<void>((r) => {
      onStop = r
    })
    const late: string[] = []
    const work: HarnessTool = {
      name: "work",
      parameters: { type: "object" },
      binding: { agentId: "t", policyVersion: "1", sideEffectClass: "read" },
      execute: async (_a, ctx) => {
        if (stopped) late.push(`work of ${ctx.task_id}@${ctx.depth}`)
        return "worked"
      },
    }
    const model: ModelClient = {
      async request(req, signal): Promise<ModelResponse> {
        const { task_id, depth, step } = req.context
        const prompt = String(req.messages[0]?.content)
        if (task_id === "x") {
          // A sibling task: its abort is the moment the run stopped.
          signal.addEventListener("abort", () => {
            stopped = true
            onStop()
          })
          return aborted(signal)
        }
        if (depth === 0)
          return { parts: [call("rlm_query", { prompt: "A" }, "a"), call("rlm_query", { prompt: "B" }, "b")] }
        if (prompt === "A") return { parts: [call("work")] } // then its second request is refused
        // B's answer lands just after the stop, while A's refusal is still being written.
        await Promise.race([stop, aborted(signal)])
        return step === 0 ? { parts: [call("work")] } : { parts: [{ type: "text", text: "b" }] }
      },
    }
    const ledger = new ActionLedger({
      storage: slowForA(new MemoryLedgerStorage()),
      clock: new ManualClock(),
      leaseTtl: 30,
      onWarning: () => {},
    })
    // Requests: t, x, A#0 and B#0 use the limit of 4; A#1 is refused.
    const err = await runPlan(
      { tasks: [task("t"), task("x"), task("out", ["t", "x"])], output_task_id: "out" },
      { model, ledger, tools: [rlmQueryTool(), work], budget: { request_limit: 4 } },
    ).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RunFailed)
    expect((err as RunFailed).result.failure).toMatchObject({ reason: "request_limit", task_id: "t" })
    expect(stopped).toBe(true)
    expect(late).toEqual([])
  })
})

// Found by property-chaos.test.ts: a resumed run charged a finished task's stored usage only when that task's row had
// been read, so a task that re-ran meanwhile spent the budget the replay then added to. The run ended at 4 requests,
// over its request_limit of 3; the run that crashed would have stopped at 3. The replay is now charged before the
// first task (durable.ts precharge; more cases in resume-budget.test.ts).
describe("a resumed durable run whose replay is charged late", () => {
  it("stays within request_limit", async () => {
    const storage = new MemoryLedgerStorage()
    const ledgerOf = (store: LedgerStorage) =>
      new ActionLedger({ storage: store, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })
    const runId = `run:${"ab".repeat(16)}`
    const plan = { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" }
    const budget = { request_limit: 3 }
    const work: HarnessTool = { name: "work", parameters: { type: "object" }, execute: () => "ok" }
    const model = (hangB: boolean): ModelClient => ({
      async request(req, signal) {
        const { task_id, step } = req.context
        if (task_id === "b" && hangB) return aborted(signal)
        if (task_id === "b" && step < 2) return { parts: [call("work")] }
        return { parts: [{ type: "text", text: task_id }] }
      },
    })
    // First run: a finishes (1 request), b's first request is in flight when the host cancels.
    const ac = new AbortController()
    const first = runPlan(
      plan,
      { model: model(true), ledger: ledgerOf(storage), tools: [work], budget },
      {
        run_id: runId,
        signal: ac.signal,
        onEvent: (e) => {
          if (e.type === "task_succeeded" && e.task_id === "a") setTimeout(() => ac.abort(), 5)
        },
      },
    )
    expect((await first.catch((e: RunFailed) => e.result)).usage.requests).toBe(2)
    // The rerun reads a's row later than b's (a slower round trip): b sends 3 requests before a's 1 is charged.
    const slowA = new Proxy(storage, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target)
        if (typeof v !== "function") return v
        if (prop !== "get") return (v as () => unknown).bind(target)
        return async (id: string) => {
          if (id === `${runId}/a`) await new Promise((r) => setTimeout(r, 20))
          return (v as (id: string) => unknown).call(target, id)
        }
      },
    })
    const second = await runPlan(
      plan,
      { model: model(false), ledger: ledgerOf(slowA), tools: [work], budget },
      { run_id: runId },
    ).catch((e: RunFailed) => e.result)
    expect(second.usage.requests).toBeLessThanOrEqual(3)
    // a's one request was charged first: b sends two, and its third is refused.
    expect(second.failure).toMatchObject({ reason: "request_limit", task_id: "b" })
    expect(second.model_requests_total).toBe(2)
  })
})
