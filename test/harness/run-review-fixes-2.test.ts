// Second round of harness review fixes: a durable run never pays again for a response it stored (even one that
// tripped a limit), a tool error the model read replays as that message, an async sink's rejection is counted,
// fail-fast reaches a sibling waiting for a request permit, and a drain that times out still ends every task.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type RunFailed,
  type RunResult,
  rlmQueryTool,
  runPlan,
  ScriptedModel,
  ToolReportedError,
} from "../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { checkInvariants, failed, recorder, task, taskEvents } from "../core/harness/helpers.ts"

const newLedger = () =>
  new ActionLedger({ storage: new MemoryLedgerStorage(), leaseTtl: 30, onWarning: () => {} })
const outcome = (p: Promise<RunResult>) => p.catch((e: unknown) => (e as RunFailed).result)

describe("durable runs", () => {
  it("do not send again a request whose response tripped a limit; the rerun replays it", async () => {
    const ledger = newLedger()
    const sent: number[] = []
    const model: ModelClient = {
      async request(req) {
        sent.push(req.context.step)
        return { parts: [{ type: "text", text: "answer" }], usage: { input_tokens: 900, output_tokens: 300 } }
      },
    }
    const plan = { tasks: [task("a")], output_task_id: "a" }
    const run_id = `run:${"ef".repeat(16)}`
    const first = await outcome(
      runPlan(plan, { model, ledger, budget: { total_tokens_limit: 1000 } }, { run_id }),
    )
    expect(first.reason).toBe("total_tokens_limit")
    expect((await ledger.get(`${run_id}/a/r0`))?.terminalOutcome).toBe("COMPLETED")
    // The same small budget trips again on the replayed response, still without a new request.
    const again = await outcome(
      runPlan(plan, { model, ledger, budget: { total_tokens_limit: 1000 } }, { run_id }),
    )
    expect(again.reason).toBe("total_tokens_limit")
    const last = await runPlan(plan, { model, ledger, budget: { total_tokens_limit: 100_000 } }, { run_id })
    expect(last.output).toBe("answer")
    expect(last.usage.total_tokens).toBe(1200)
    expect(sent).toEqual([0])
  })

  it("replay a side-effecting tool's reported error to the model instead of hard-blocking the resumed task", async () => {
    const ledger = newLedger()
    let charges = 0
    const charge: HarnessTool = {
      name: "charge",
      parameters: { type: "object" },
      binding: { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      execute: async () => {
        charges++
        throw new ToolReportedError("card declined; ask for another card")
      },
    }
    const seen: string[] = []
    const model = (providerDown: boolean): ModelClient => ({
      async request(req: ModelRequest) {
        if (req.context.step === 0)
          return { parts: [{ type: "tool_call", id: "c1", name: "charge", args: { amount: 5 } }] }
        const reply = req.messages.at(-1) as { content: string; is_error?: boolean }
        seen.push(`${reply.is_error}:${reply.content}`)
        if (providerDown) throw new Error("provider 500")
        return { parts: [{ type: "text", text: "declined" }] }
      },
    })
    const plan = { tasks: [task("pay")], output_task_id: "pay" }
    const run_id = `run:${"ab".repeat(16)}`
    const first = await outcome(runPlan(plan, { model: model(true), ledger, tools: [charge] }, { run_id }))
    expect(first.failure?.message).toBe("provider 500")
    const second = await runPlan(plan, { model: model(false), ledger, tools: [charge] }, { run_id })
    expect(second.output).toBe("declined")
    expect(charges).toBe(1)
    expect(seen).toEqual([
      "true:card declined; ask for another card",
      "true:card declined; ask for another card",
    ])
  })

  it("still record a tool error that fails the task as a failure", async () => {
    const ledger = newLedger()
    const broken: HarnessTool = {
      name: "broken",
      parameters: { type: "object" },
      execute: async () => {
        throw new Error("disk on fire")
      },
    }
    const model = new ScriptedModel({ fallback: [{ tool_calls: [{ name: "broken" }] }] })
    const run_id = `run:${"cd".repeat(16)}`
    const { result } = await failed(
      runPlan({ tasks: [task("t")], output_task_id: "t" }, { model, ledger, tools: [broken] }, { run_id }),
    )
    expect(result.failure?.message).toBe("disk on fire")
    expect((await ledger.get(`${run_id}/t/r0/c0`))?.terminalOutcome).not.toBe("COMPLETED")
  })
})

it("an async sink that rejects is counted in sink_errors, and the run goes on", async () => {
  let delivered = 0
  const result = await runPlan(
    { tasks: [task("a")], output_task_id: "a" },
    { model: new ScriptedModel() },
    {
      onEvent: async (e) => {
        delivered++
        throw new Error(`sink failed on ${e.type}`)
      },
    },
  )
  expect(result.status).toBe("succeeded")
  expect(delivered).toBe(5)
  expect(result.sink_errors).toBe(5)
})

describe("fail fast", () => {
  it("never sends the request of a sibling that was waiting for the failed task's permit", async () => {
    const model = new ScriptedModel({
      byTask: { a: [{ error: "provider 500", delay_ms: 20 }], b: [{ text: "B" }] },
    })
    const { events, onEvent } = recorder()
    const plan = {
      tasks: [task("a"), task("b"), task("c", ["a", "b"])],
      output_task_id: "c",
      max_concurrency: 2,
    }
    const { result } = await failed(
      runPlan(plan, { model, budget: { max_concurrent_requests: 1 } }, { onEvent }),
    )
    expect(model.requests.map((r) => r.context.task_id)).toEqual(["a"])
    expect(result.failure?.task_id).toBe("a")
    expect(taskEvents(events, "b").map((e) => e.type)).toEqual(["task_started", "task_cancelled"])
    checkInvariants(events, result, 2)
  })

  it("reaches a waiting sibling when a tool fails while the task's sub-query holds the permit", async () => {
    const boom: HarnessTool = {
      name: "boom",
      parameters: { type: "object" },
      execute: () => new Promise((_res, rej) => setTimeout(() => rej(new Error("boom")), 30)),
    }
    const nap: HarnessTool = { name: "nap", parameters: { type: "object" }, execute: () => sleep(10) }
    const model = new ScriptedModel({
      byTask: {
        a: [{ tool_calls: [{ name: "rlm_query", args: { prompt: "q" } }, { name: "boom" }] }],
        "a@1": [{ text: "sub", delay_ms: 1000 }],
        b: [{ tool_calls: [{ name: "nap" }] }, { text: "B" }],
      },
    })
    const plan = {
      tasks: [task("a"), task("b"), task("c", ["a", "b"])],
      output_task_id: "c",
      max_concurrency: 2,
    }
    const { result } = await failed(
      runPlan(plan, { model, tools: [rlmQueryTool(), boom, nap], budget: { max_concurrent_requests: 1 } }),
    )
    expect(result.failure?.task_id).toBe("a")
    // b's second request waited for the sub-query's permit; it was released only by a's failure.
    expect(model.requests.filter((r) => r.context.task_id === "b")).toHaveLength(1)
  })
})

describe("a drain that times out", () => {
  it("ends each unsettled task with its terminal event before run_finished", async () => {
    const hang: HarnessTool = {
      name: "hang",
      parameters: { type: "object" },
      execute: () => new Promise(() => {}),
    }
    const model = new ScriptedModel({
      byTask: {
        a: [{ error: "boom", delay_ms: 20 }],
        b: [{ tool_calls: [{ name: "hang" }] }, { text: "x" }],
      },
    })
    const { events, onEvent } = recorder()
    const plan = { tasks: [task("a"), task("b"), task("o", ["a", "b"])], output_task_id: "o" }
    const { result } = await failed(
      runPlan(plan, { model, tools: [hang] }, { drain_timeout_seconds: 0.1, onEvent }),
    )
    expect(result.drain_incomplete).toBe(true)
    const b = taskEvents(events, "b").at(-1)
    expect(b?.type === "task_cancelled" && b.reason).toBe("sibling_failed")
    expect(result.tasks[1]?.elapsed_ms).not.toBeNull()
    checkInvariants(events, result, 4)
  })

  it("ends a failing task whose tool ignores the abort with task_failed", async () => {
    const boom: HarnessTool = {
      name: "boom",
      parameters: { type: "object" },
      execute: () => new Promise((_res, rej) => setTimeout(() => rej(new Error("boom")), 10)),
    }
    const hang: HarnessTool = {
      name: "hang",
      parameters: { type: "object" },
      execute: () => new Promise(() => {}),
    }
    const model = new ScriptedModel({ fallback: [{ tool_calls: [{ name: "hang" }, { name: "boom" }] }] })
    const { events, onEvent } = recorder()
    const { result } = await failed(
      runPlan(
        { tasks: [task("t")], output_task_id: "t" },
        { model, tools: [hang, boom] },
        { drain_timeout_seconds: 0.1, onEvent },
      ),
    )
    expect(result).toMatchObject({ reason: "task_failed", drain_incomplete: true })
    expect(result.tasks[0]?.status).toBe("failed")
    expect(taskEvents(events, "t").at(-1)?.type).toBe("task_failed")
    checkInvariants(events, result, 4)
  }, 3000)
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
