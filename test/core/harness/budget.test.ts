// BUD-01..08: one budget for the whole run, reserved atomically, checked before requests and tool batches.
import { describe, expect, it } from "vitest"
import {
  BudgetValidationError,
  type HarnessTool,
  resolveBudget,
  runPlan,
  ScriptedModel,
  type ScriptStep,
  sleep,
} from "../../../src/core/harness/index.ts"
import { checkInvariants, failed, recorder, task } from "./helpers.ts"

const fanIn = (n: number, extra: Partial<{ max_concurrency: number }> = {}) => ({
  tasks: [
    ...Array.from({ length: n }, (_, i) => task(`p${i}`)),
    task(
      "out",
      Array.from({ length: n }, (_, i) => `p${i}`),
    ),
  ],
  output_task_id: "out",
  ...extra,
})

/** A tool that records how many of its calls run at once and in which order they start. */
function probeTool(delay = 10): HarnessTool & { starts: string[]; peak: number; running: number } {
  const t = {
    name: "probe",
    parameters: { type: "object" },
    starts: [] as string[],
    peak: 0,
    running: 0,
    async execute(args: Record<string, unknown>) {
      t.starts.push(String(args.n))
      t.running++
      t.peak = Math.max(t.peak, t.running)
      try {
        await sleep(delay) // short; 50 listeners on one signal would only add noise
      } finally {
        t.running--
      }
      return `ok ${String(args.n)}`
    },
  }
  return t
}

const calls = (k: number, from = 0): ScriptStep => ({
  tool_calls: Array.from({ length: k }, (_, i) => ({ name: "probe", args: { n: from + i } })),
})

describe("shared budget", () => {
  it("BUD-01: request_limit is shared by parallel tasks and never overshot, even at full concurrency", async () => {
    for (const limit of [1, 5, 7]) {
      // Every task loops on tool calls forever: only the shared request limit can stop them.
      const tool = probeTool(1)
      const model = new ScriptedModel({ fallback: () => ({ ...calls(1), delay_ms: 2 }) })
      const err = await failed(
        runPlan(fanIn(3, { max_concurrency: 3 }), {
          model,
          tools: [tool],
          budget: { request_limit: limit, max_concurrent_requests: 3 },
        }),
      )
      expect(err.result.reason).toBe("request_limit")
      expect(err.result.status).toBe("stopped")
      expect(model.requests.length).toBeLessThanOrEqual(limit)
      expect(err.result.usage.requests).toBe(model.requests.length)
      expect(err.result.model_requests_total).toBe(model.requests.length)
    }
  })

  it("BUD-02: initial_usage.requests reduces the allowance across the plan and is in the final usage", async () => {
    const model = new ScriptedModel({ fallback: () => ({ ...calls(1), delay_ms: 1 }) })
    const err = await failed(
      runPlan(
        { dependency_plan: fanIn(2), initial_usage: { requests: 3, input_tokens: 10, details: { plan: 1 } } },
        { model, tools: [probeTool(0)], budget: { request_limit: 5 } },
      ),
    )
    expect(model.requests).toHaveLength(2)
    expect(err.result.usage.requests).toBe(5)
    expect(err.result.usage.input_tokens).toBe(10)
    expect(err.result.usage.details).toEqual({ plan: 1 })
    const ok = await runPlan(
      { dependency_plan: fanIn(2), initial_usage: { requests: 3, output_tokens: 4 } },
      {
        model: new ScriptedModel({ fallback: [{ text: "x", usage: { input_tokens: 1, output_tokens: 2 } }] }),
      },
    )
    expect(ok.usage).toMatchObject({ requests: 6, input_tokens: 3, output_tokens: 10, total_tokens: 13 })
  })

  it("BUD-03: initial usage at a limit sends no request and emits no task event", async () => {
    for (const [initial_usage, budget, reason] of [
      [{ requests: 5 }, { request_limit: 5 }, "request_limit"],
      [{ input_tokens: 11 }, { input_tokens_limit: 10 }, "input_tokens_limit"],
      [{ input_tokens: 6, output_tokens: 6 }, { total_tokens_limit: 10 }, "total_tokens_limit"],
      [{ output_tokens: 11 }, { output_tokens_limit: 10 }, "output_tokens_limit"],
      [{ tool_calls: 4 }, { tool_calls_limit: 3 }, "tool_calls_limit"],
    ] as const) {
      const model = new ScriptedModel()
      const { events, onEvent } = recorder()
      const err = await failed(
        runPlan({ dependency_plan: fanIn(2), initial_usage }, { model, budget }, { onEvent }),
      )
      expect(err.result).toMatchObject({ status: "stopped", reason, output: null })
      expect(err.result.failure?.task_id).toBeNull()
      expect(model.requests).toHaveLength(0)
      expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
      expect(err.result.tasks.every((t) => t.status === "not_started")).toBe(true)
    }
  })

  it("calls to unknown tools reserve nothing: they do not count against tool_calls_limit", async () => {
    const tool = probeTool(0)
    const model = new ScriptedModel({
      byTask: {
        t: [{ tool_calls: [{ name: "probe" }, { name: "nope1" }, { name: "nope2" }] }, { text: "answer" }],
      },
    })
    const result = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      { model, tools: [tool], budget: { tool_calls_limit: 1 } },
    )
    expect(result.output).toBe("answer")
    expect(result.usage.tool_calls).toBe(1)
    const replies = model.requests[1]?.messages.filter((m) => m.role === "tool") ?? []
    expect(replies.map((m) => m.is_error === true)).toEqual([false, true, true])
  })

  it("BUD-04: landing exactly on tool_calls_limit still lets the task answer", async () => {
    const tool = probeTool(0)
    const model = new ScriptedModel({ byTask: { t: [calls(1, 0), calls(2, 1), { text: "answer" }] } })
    const result = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      { model, tools: [tool], budget: { tool_calls_limit: 3 } },
    )
    expect(result.output).toBe("answer")
    expect(result.usage.tool_calls).toBe(3)
    expect(tool.starts).toEqual(["0", "1", "2"])
  })

  it("BUD-04/05: 3 calls then a 4th stops with tool_calls_limit and executes none of the batch", async () => {
    const tool = probeTool(0)
    const model = new ScriptedModel({
      byTask: { t: [calls(1, 0), calls(1, 1), calls(1, 2), calls(1, 3), { text: "never" }] },
    })
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(
        { tasks: [task("t")], output_task_id: "t" },
        { model, tools: [tool], budget: { tool_calls_limit: 3 } },
        { onEvent },
      ),
    )
    expect(err.result).toMatchObject({ status: "stopped", reason: "tool_calls_limit", output: null })
    expect(err.result.failure?.task_id).toBe("t")
    expect(err.result.failure?.message).toContain("would exceed the tool_calls_limit of 3 (tool_calls=3)")
    expect(err.result.usage.tool_calls).toBe(3)
    expect(tool.starts).toEqual(["0", "1", "2"])
    expect(model.requests).toHaveLength(4)
    checkInvariants(events, err.result, 1)
  })

  it("BUD-05: a 2-call batch at 2/3 executes neither call", async () => {
    const tool = probeTool(0)
    const model = new ScriptedModel({ byTask: { t: [calls(2, 0), calls(2, 2), { text: "never" }] } })
    const err = await failed(
      runPlan(
        { tasks: [task("t")], output_task_id: "t" },
        { model, tools: [tool], budget: { tool_calls_limit: 3 } },
      ),
    )
    expect(err.result.reason).toBe("tool_calls_limit")
    expect(tool.starts).toEqual(["0", "1"])
    expect(err.result.usage.tool_calls).toBe(2)
  })

  it("BUD-05: calls another task reserved but has not started count: two batches cannot pass tool_calls_limit", async () => {
    // a's 3 calls run one at a time; b's 2-call batch arrives while a's first runs (1 done, 2 reserved).
    const tool = probeTool(50)
    const model = new ScriptedModel({
      byTask: { a: [calls(3, 0), { text: "a" }], b: [{ ...calls(2, 3), delay_ms: 5 }, { text: "b" }] },
    })
    const err = await failed(
      runPlan(
        { tasks: [task("a"), task("b"), task("z", ["a", "b"])], output_task_id: "z", max_concurrency: 2 },
        { model, tools: [tool], budget: { tool_calls_limit: 3, max_parallel_tool_calls: 1 } },
      ),
    )
    expect(err.result.reason).toBe("tool_calls_limit")
    expect(err.result.failure?.task_id).toBe("b")
    expect(tool.starts).toEqual(["0"])
  })

  it("BUD-06: a response that pushes total tokens over the limit stops the run and its tokens count", async () => {
    const model = new ScriptedModel({
      byTask: {
        a: [
          { ...calls(1), usage: { input_tokens: 40, output_tokens: 30 } },
          { text: "x", usage: { input_tokens: 50, output_tokens: 5 } },
        ],
      },
    })
    const err = await failed(
      runPlan(
        { tasks: [task("a"), task("b", ["a"])], output_task_id: "b" },
        { model, tools: [probeTool(0)], budget: { total_tokens_limit: 100 } },
      ),
    )
    expect(err.result).toMatchObject({ status: "stopped", reason: "total_tokens_limit" })
    expect(err.result.failure?.task_id).toBe("a")
    expect(err.result.usage.total_tokens).toBe(125)
    expect(model.requests).toHaveLength(2)
    expect(err.result.tasks[1]?.status).toBe("not_started")
  })

  it("BUD-06: output and input token limits trip after the response", async () => {
    for (const [budget, reason] of [
      [{ output_tokens_limit: 5 }, "output_tokens_limit"],
      [{ input_tokens_limit: 5 }, "input_tokens_limit"],
    ] as const) {
      const model = new ScriptedModel({
        fallback: [{ text: "x", usage: { input_tokens: 6, output_tokens: 6 } }],
      })
      const err = await failed(runPlan({ tasks: [task("a")], output_task_id: "a" }, { model, budget }))
      expect(err.result.reason).toBe(reason)
      expect(err.result.output).toBeNull()
      expect(err.result.usage.output_tokens).toBe(6)
    }
  })

  it("BUD-07: at most 4 requests in flight by default, 2 when set", async () => {
    for (const [max_concurrent_requests, expected] of [
      [undefined, 4],
      [2, 2],
    ] as const) {
      const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 15 }] })
      const result = await runPlan(fanIn(10, { max_concurrency: 10 }), {
        model,
        budget: max_concurrent_requests ? { max_concurrent_requests } : {},
      })
      expect(model.peakInFlight).toBe(expected)
      expect(result.status).toBe("succeeded")
    }
  })

  it("BUD-07: the host's concurrency defaults apply where the budget sets nothing", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 15 }] })
    const { events, onEvent } = recorder()
    await runPlan(
      fanIn(6, { max_concurrency: 6 }),
      { model, concurrency_defaults: { max_concurrent_requests: 3, max_parallel_tool_calls: 7 } },
      { onEvent },
    )
    expect(model.peakInFlight).toBe(3)
    expect(events[0]).toMatchObject({ budget: { max_concurrent_requests: 3, max_parallel_tool_calls: 7 } })
    expect(() => runPlan(fanIn(1), { model, concurrency_defaults: { max_concurrent_requests: 0 } })).toThrow(
      BudgetValidationError,
    )
  })

  it("BUD-07: an explicit null cap falls back to 4 and 50, while a null limit means no limit", () => {
    // A host passing null for "unset" must not get an unbounded fan-out; only the limits read null as pydantic-ai's None.
    expect(
      resolveBudget({ max_concurrent_requests: null, max_parallel_tool_calls: null, request_limit: null }),
    ).toMatchObject({ max_concurrent_requests: 4, max_parallel_tool_calls: 50, request_limit: null })
    expect(resolveBudget({ max_concurrent_requests: null }, { max_concurrent_requests: 3 })).toMatchObject({
      max_concurrent_requests: 3,
      request_limit: 50,
    })
  })

  it("BUD-07: a task waiting for a request permit keeps its slot", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 15 }] })
    const { events, onEvent } = recorder()
    await runPlan(
      fanIn(6, { max_concurrency: 6 }),
      { model, budget: { max_concurrent_requests: 1 } },
      { onEvent },
    )
    expect(model.peakInFlight).toBe(1)
    // All six roots started at once even though only one request could be in flight.
    expect(events.slice(1, 7).every((e) => e.type === "task_started")).toBe(true)
  })

  it("BUD-08: tool fan-out is capped at 50 by default and at the set value, in call order", async () => {
    const many = probeTool(15)
    const model = new ScriptedModel({ byTask: { t: [calls(60), { text: "done" }] } })
    await runPlan({ tasks: [task("t")], output_task_id: "t" }, { model, tools: [many] })
    expect(many.peak).toBe(50)
    const three = probeTool(15)
    const m2 = new ScriptedModel({ byTask: { t: [calls(5), { text: "done" }] } })
    const r = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      { model: m2, tools: [three], budget: { max_parallel_tool_calls: 3 } },
    )
    expect(three.peak).toBe(3)
    expect(three.starts).toEqual(["0", "1", "2", "3", "4"])
    expect(r.usage.tool_calls).toBe(5)
    // Tool returns go back to the model in call order.
    const toolMsgs = m2.requests[1]?.messages.filter((m) => m.role === "tool").map((m) => m.content)
    expect(toolMsgs).toEqual(["ok 0", "ok 1", "ok 2", "ok 3", "ok 4"])
  })
})
