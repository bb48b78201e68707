// Review fixes in the in-run harness: a tripped output limit refuses later requests (rlm_parallel included), work a
// tool leaves running settles before its task ends, every task_failed follows a task_started, ScriptedModel reads
// own script keys only, and an invalid reply part never puts the model's text in a failure.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  rlmParallelTool,
  runPlan,
  ScriptedModel,
} from "../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { allStrings, checkInvariants, failed, recorder, task, taskEvents } from "../core/harness/helpers.ts"

const single = { tasks: [task("t")], output_task_id: "t" }
const userText = (req: ModelRequest) => (req.messages[0] as { content: string }).content

describe("output_tokens_limit", () => {
  it("refuses a request once committed output already exceeds it, as the input and total limits do", async () => {
    const model = new ScriptedModel({
      byTask: {
        a: [{ text: "A", usage: { input_tokens: 1, output_tokens: 100 }, delay_ms: 10 }],
        b: [{ text: "B", usage: { input_tokens: 1, output_tokens: 1 }, delay_ms: 50 }],
      },
    })
    const plan = {
      tasks: [task("a"), task("b"), task("c", ["a", "b"])],
      output_task_id: "c",
      max_concurrency: 2,
    }
    const { result } = await failed(
      runPlan(plan, { model, budget: { output_tokens_limit: 10, max_concurrent_requests: 1 } }),
    )
    expect(result.reason).toBe("output_tokens_limit")
    // b waited for a's permit; by then a's 100 output tokens were over the limit, so b was never sent.
    expect(model.requests.map((r) => r.context.task_id)).toEqual(["a"])
    expect(result.usage.output_tokens).toBe(100)
  })

  it("stops rlm_parallel's running sub-queries as soon as one trips it", async () => {
    const model = new ScriptedModel({
      byTask: {
        t: [
          {
            tool_calls: [
              { name: "rlm_parallel", args: { queries: [1, 2, 3, 4].map((n) => ({ prompt: `q${n}` })) } },
            ],
          },
        ],
        "t@1": (req) => ({
          text: "sub",
          usage: { input_tokens: 1, output_tokens: 50 },
          delay_ms: userText(req) === "q1" ? 10 : 3000,
        }),
      },
    })
    const { result } = await failed(
      runPlan(single, { model, tools: [rlmParallelTool()], budget: { output_tokens_limit: 10 } }),
    )
    expect(result.reason).toBe("output_tokens_limit")
    const subs = result.model_requests.filter((s) => s.depth === 1).map((s) => s.outcome)
    expect(subs.sort()).toEqual(["cancelled", "cancelled", "cancelled", "ok"])
    expect(result.usage.output_tokens).toBe(50)
    expect(result.run_elapsed_ms).toBeLessThan(2000)
  })
})

describe("a sub-query a tool leaves running", () => {
  // Honours the abort, but reports it asynchronously (as fetch() does); `hang` never settles at all.
  const modelWith = (sub: "late" | "hang"): ModelClient => ({
    request(req, signal) {
      if (req.context.depth === 1)
        return new Promise((_res, rej) => {
          if (sub === "late") signal.addEventListener("abort", () => setTimeout(() => rej(signal.reason), 5))
        })
      if (req.context.step === 0 && req.context.task_id === "t")
        return Promise.resolve({ parts: [{ type: "tool_call", id: "c1", name: "fire", args: {} }] })
      // t answers at once, so the run moves on to u while t's sub-query is still reporting its abort.
      const reply = { parts: [{ type: "text" as const, text: "final" }] }
      return new Promise((res) => setTimeout(() => res(reply), req.context.task_id === "u" ? 50 : 0))
    },
  })
  const fire: HarnessTool = {
    name: "fire",
    parameters: { type: "object" },
    execute: (_a, ctx) => {
      void ctx.spawn({ prompt: "background" }).catch(() => {})
      return "started"
    },
  }
  const plan = { tasks: [task("t"), task("u", ["t"])], output_task_id: "u" }

  it("settles before its task's terminal event, and its request is counted in the result", async () => {
    const { events, onEvent } = recorder()
    const result = await runPlan(plan, { model: modelWith("late"), tools: [fire] }, { onEvent })
    checkInvariants(events, result, 4)
    const t = taskEvents(events, "t").map((e) => e.type)
    expect(t).toEqual([
      "task_started",
      "model_request_finished",
      "model_request_finished",
      "model_request_finished",
      "task_succeeded",
    ])
    expect(result.model_requests_total).toBe(4)
    expect(result.usage.requests).toBe(4)
    expect(result.model_requests_coverage).toBe("complete")
  })

  it("is waited for no longer than the drain timeout when its client ignores the abort", async () => {
    const result = await runPlan(
      plan,
      { model: modelWith("hang"), tools: [fire] },
      { drain_timeout_seconds: 0.2 },
    )
    expect(result.output).toBe("final")
  })
})

it("a durable task whose tools factory throws still sends task_started before task_failed", async () => {
  const { events, onEvent } = recorder()
  const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), leaseTtl: 30 })
  const tools = () => {
    throw new Error("tool factory broke")
  }
  const { result } = await failed(runPlan(single, { model: new ScriptedModel(), tools, ledger }, { onEvent }))
  expect(result.reason).toBe("task_failed")
  expect(taskEvents(events, "t").map((e) => e.type)).toEqual(["task_started", "task_failed"])
  checkInvariants(events, result, 4)
})

it("ScriptedModel finds a task's script among its own keys only", async () => {
  for (const id of ["constructor", "toString", "valueOf", "__proto__", "hasOwnProperty"]) {
    const model = new ScriptedModel({ byTask: { other: [{ text: "x" }] } })
    const r = await runPlan({ tasks: [task(id)], output_task_id: id }, { model })
    expect(r.output).toBe(`done:${id}`)
  }
  const own = new ScriptedModel({ byTask: { constructor: [{ text: "mine" }] } })
  const r = await runPlan({ tasks: [task("constructor")], output_task_id: "constructor" }, { model: own })
  expect(r.output).toBe("mine")
})

it("an invalid reply part is named by its clipped type and text length, never its text", async () => {
  for (const type of ["output_text", `${"x".repeat(200)}\n\u202e`]) {
    const model: ModelClient = {
      request: async () => ({ parts: [{ type, text: "TOP-SECRET DRAFT ANSWER" }] }) as never,
    }
    const { events, onEvent } = recorder()
    const { result } = await failed(runPlan(single, { model }, { onEvent }))
    expect(result.failure?.error_type).toBe("InvalidModelResponseError")
    expect(result.failure?.message).toContain("(23 text chars)")
    for (const s of [...allStrings(result), ...allStrings(events)]) {
      expect(s).not.toContain("TOP-SECRET")
      expect(s).not.toContain("x".repeat(41))
      expect(s).not.toMatch(/[\n\u202e]/)
    }
  }
  const model: ModelClient = { request: async () => ({ parts: [{ type: "output_text" }] }) as never }
  const { result } = await failed(runPlan(single, { model }))
  expect(result.failure?.message).toContain("invalid part of type 'output_text';")
})
