// EVT-01..03 and MET-01..02: per-run sequences and ids, task event fields, the terminal event, bounded samples.
import { describe, expect, it } from "vitest"
import { type ModelClient, runPlan, ScriptedModel, sleep } from "../../../src/core/harness/index.ts"
import { checkInvariants, failed, recorder, task, taskEvents } from "./helpers.ts"

const diamond = {
  tasks: [task("A"), task("B", ["A"]), task("C", ["A"]), task("D", ["B", "C"])],
  output_task_id: "D",
  plan_id: "plan:events",
}

describe("events", () => {
  it("EVT-01/02: contiguous per-run sequences, unique ids, task events carry their identity", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 2 }] })
    const { events, onEvent } = recorder()
    const result = await runPlan(diamond, { model }, { onEvent })
    checkInvariants(events, result, 4)
    const started = events[0]
    expect(started).toMatchObject({
      type: "run_started",
      plan_id: "plan:events",
      task_ids: ["A", "B", "C", "D"],
      output_task_id: "D",
      max_concurrency: 4,
      budget: { request_limit: 50, max_concurrent_requests: 4, max_parallel_tool_calls: 50 },
    })
    expect(started?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    for (const e of taskEvents(events)) {
      expect(e.parent_run_id).toBe(result.run_id)
      expect(e.plan_id).toBe("plan:events")
      expect(e.run_id).not.toBe(result.run_id)
      expect(e.depends_on).toEqual(diamond.tasks.find((t) => t.task_id === e.task_id)?.depends_on)
    }
    expect(new Set(taskEvents(events).map((e) => e.run_id)).size).toBe(4)
    expect(result.tasks.map((t) => t.run_id)).toEqual(
      ["A", "B", "C", "D"].map((id) => taskEvents(events, id)[0]?.run_id),
    )
    const kinds = taskEvents(events, "B").map((e) => e.type)
    expect(kinds).toEqual(["task_started", "model_request_finished", "task_succeeded"])
    const succeeded = taskEvents(events, "B")[2]
    expect(succeeded).toMatchObject({ output_chars: 1 })
    expect(succeeded && "output" in succeeded).toBe(false)
  })

  it("EVT-03: the terminal event has output only on success", async () => {
    const ok = recorder()
    await runPlan(
      diamond,
      { model: new ScriptedModel({ byTask: { D: [{ text: "final!" }] } }) },
      { onEvent: ok.onEvent },
    )
    expect(ok.events.at(-1)).toMatchObject({ type: "run_finished", status: "succeeded", output: "final!" })
    const bad = recorder()
    await failed(
      runPlan(
        diamond,
        { model: new ScriptedModel({ byTask: { D: [{ error: "no" }] } }) },
        { onEvent: bad.onEvent },
      ),
    )
    const last = bad.events.at(-1)
    expect(last).toMatchObject({ type: "run_finished", status: "failed", reason: "task_failed" })
    expect(last && "output" in last).toBe(false)
  })

  it("a throwing sink is counted and the run goes on", async () => {
    let calls = 0
    const result = await runPlan(
      diamond,
      { model: new ScriptedModel() },
      {
        onEvent: () => {
          calls++
          throw new Error("sink down")
        },
      },
    )
    expect(result.status).toBe("succeeded")
    expect(result.sink_errors).toBe(calls)
    expect(calls).toBeGreaterThan(5)
  })

  it("run_started's task_ids is frozen like the event holding it", async () => {
    const { events, onEvent } = recorder()
    await runPlan(diamond, { model: new ScriptedModel() }, { onEvent })
    const started = events[0]
    if (started?.type !== "run_started") throw new Error("the first event is not run_started")
    expect(started.task_ids).toEqual(["A", "B", "C", "D"])
    expect(Object.isFrozen(started.task_ids)).toBe(true)
  })
})

describe("measurements", () => {
  it("MET-01: samples ordered by start with attribution; unreported tokens are null, explicit zero is 0", async () => {
    const model = new ScriptedModel({
      byTask: {
        A: [
          {
            text: "a",
            usage: { input_tokens: 7, output_tokens: 0, cache_read_tokens: 2 },
            provider_name: "acme",
            model_name: "acme-1",
            finish_reason: "stop",
          },
        ],
        B: [{ text: "b", delay_ms: 5 }],
        C: [{ text: "c", usage: { output_tokens: 3 } }],
        D: [{ error: new RangeError("bad gateway") }],
      },
    })
    const err = await failed(runPlan(diamond, { model, model_name: "openai:gpt-test" }))
    const s = err.result.model_requests
    expect(s.map((x) => x.index)).toEqual([0, 1, 2, 3])
    expect(s.map((x) => x.started_ms)).toEqual([...s.map((x) => x.started_ms)].sort((a, b) => a - b))
    expect(s[0]).toMatchObject({
      task_id: "A",
      depth: 0,
      outcome: "ok",
      model_name: "acme-1",
      provider_name: "acme",
      input_tokens: 7,
      output_tokens: 0,
      cache_read_tokens: 2,
      finish_reason: "stop",
    })
    const b = s.find((x) => x.task_id === "B")
    expect(b).toMatchObject({
      input_tokens: null,
      output_tokens: null,
      model_name: "openai:gpt-test",
      provider_name: "openai",
    })
    expect(s.find((x) => x.task_id === "C")).toMatchObject({ input_tokens: null, output_tokens: 3 })
    expect(s[3]).toMatchObject({
      task_id: "D",
      outcome: "error",
      error_type: "RangeError",
      input_tokens: null,
    })
    for (const x of s) {
      expect(x.client_request_elapsed_ms).toBeGreaterThanOrEqual(0)
      expect(x.run_id).toBe(err.result.tasks.find((t) => t.task_id === x.task_id)?.run_id)
    }
    expect(err.result.model_requests_coverage).toBe("complete")
    expect(err.result.usage.input_tokens).toBe(7) // nothing estimated for the requests that reported none
  })

  it("MET-01: client_request_elapsed_ms covers only the model call", async () => {
    const slow: ModelClient = {
      request: () => sleep(40).then(() => ({ parts: [{ type: "text", text: "x" }] })),
    }
    const r = await runPlan({ tasks: [task("a")], output_task_id: "a" }, { model: slow })
    expect(r.model_requests[0]?.client_request_elapsed_ms).toBeGreaterThanOrEqual(35)
    expect(r.run_elapsed_ms).toBeGreaterThanOrEqual(r.model_requests[0]?.client_request_elapsed_ms as number)
  })

  it("MET-02: 300 requests with a bound of 256 keep the first 256 and report partial; 10 are complete", async () => {
    const tools = [{ name: "noop", parameters: {}, execute: () => "ok" }]
    const loop = (n: number) =>
      new ScriptedModel({
        fallback: (_req, call) => (call < n - 1 ? { tool_calls: [{ name: "noop" }] } : { text: "done" }),
      })
    const big = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      { model: loop(300), tools, budget: { request_limit: 1_000 } },
    )
    expect(big.model_requests_total).toBe(300)
    expect(big.model_requests).toHaveLength(256)
    expect(big.model_requests.map((s) => s.index)).toEqual(Array.from({ length: 256 }, (_, i) => i))
    expect(big.model_requests_coverage).toBe("partial")
    const small = await runPlan({ tasks: [task("t")], output_task_id: "t" }, { model: loop(10), tools })
    expect(small.model_requests).toHaveLength(10)
    expect(small.model_requests_coverage).toBe("complete")
    const none = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      { model: loop(3), tools, max_request_samples: 0 },
    )
    expect(none.model_requests).toEqual([])
    expect(none.model_requests_coverage).toBe("partial")
  })
})
