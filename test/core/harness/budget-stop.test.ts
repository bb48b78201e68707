// A budget trip stops the run where it is met, as a task's failure does: not a few microtasks later, when the
// tripping task settles, by which time a sibling whose answer landed in the same tick had started a dependent task
// or run its own tool batch under a run that had already stopped.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type ResponsePart,
  runPlan,
  ScriptedModel,
} from "../../../src/core/harness/index.ts"
import { checkInvariants, failed, recorder, task } from "./helpers.ts"

/** Answers every task's first request in one macrotask, once `n` are in flight; later requests at once. */
function togetherModel(
  n: number,
  first: (req: ModelRequest) => { parts: ResponsePart[]; usage?: { input_tokens: number } },
): ModelClient & { sent: string[] } {
  let open = 0
  let release: () => void = () => {}
  const gate = new Promise<void>((r) => {
    release = r
  })
  const sent: string[] = []
  return {
    sent,
    async request(req, signal) {
      sent.push(`${req.context.task_id}#${req.context.step}`)
      if (req.context.step > 0) return { parts: [{ type: "text", text: "late" }] }
      if (++open === n) setTimeout(release, 5)
      await gate
      if (signal.aborted) throw signal.reason
      return first(req)
    },
  }
}

const call = (id: string): ResponsePart => ({ type: "tool_call", id, name: "t", args: { id } })
const text = (t: string): ResponsePart => ({ type: "text", text: t })

function countingTool(): HarnessTool & { runs: string[] } {
  const runs: string[] = []
  return { name: "t", parameters: { type: "object" }, runs, execute: (args) => runs.push(String(args.id)) }
}

// a and b answer together; c needs only b; z needs a and c.
const plan = {
  tasks: [task("a"), task("b"), task("c", ["b"]), task("z", ["a", "c"])],
  output_task_id: "z",
  max_concurrency: 2,
}

describe("a budget trip stops the run where it is met", () => {
  it("tool_calls_limit: a sibling that answers in the same tick starts no dependent", async () => {
    const tool = countingTool()
    const model = togetherModel(2, (r) =>
      r.context.task_id === "a" ? { parts: [call("a1"), call("a2"), call("a3")] } : { parts: [text("b")] },
    )
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(plan, { model, tools: [tool], budget: { tool_calls_limit: 2 } }, { onEvent }),
    )
    expect(err.result.failure).toMatchObject({ reason: "tool_calls_limit", task_id: "a" })
    expect(events.filter((e) => e.type === "task_started").map((e) => "task_id" in e && e.task_id)).toEqual([
      "a",
      "b",
    ])
    expect(err.result.tasks.map((t) => t.status).slice(2)).toEqual(["not_started", "not_started"])
    expect(model.sent).toEqual(["a#0", "b#0"])
    expect(tool.runs).toEqual([])
    checkInvariants(events, err.result, 2)
  })

  it("tool_calls_limit: a sibling's tool batch that lands in the same tick never runs", async () => {
    const tool = countingTool()
    const model = togetherModel(2, (r) =>
      r.context.task_id === "a" ? { parts: [call("a1"), call("a2"), call("a3")] } : { parts: [call("b1")] },
    )
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(plan, { model, tools: [tool], budget: { tool_calls_limit: 2 } }, { onEvent }),
    )
    expect(err.result.failure).toMatchObject({ reason: "tool_calls_limit", task_id: "a" })
    expect(tool.runs).toEqual([])
    expect(err.result.usage.tool_calls).toBe(0)
    expect(model.sent).toEqual(["a#0", "b#0"])
    checkInvariants(events, err.result, 2)
  })

  it("a token limit crossed by a response: a sibling answering in the same tick starts no dependent", async () => {
    const model = togetherModel(2, (r) =>
      r.context.task_id === "a"
        ? { parts: [text("a")], usage: { input_tokens: 200 } }
        : { parts: [text("b")] },
    )
    const { events, onEvent } = recorder()
    const err = await failed(runPlan(plan, { model, budget: { input_tokens_limit: 100 } }, { onEvent }))
    expect(err.result.failure).toMatchObject({ reason: "input_tokens_limit", task_id: "a" })
    expect(err.result.tasks.map((t) => t.status).slice(2)).toEqual(["not_started", "not_started"])
    expect(model.sent).toEqual(["a#0", "b#0"])
    checkInvariants(events, err.result, 2)
  })

  it("a request_limit refusal counts the requests still in flight: 'limit of 2 (requests=2)', not requests=1", async () => {
    const tool = countingTool()
    // a answers first with a tool call; its next request is refused while b's first is still in flight. b answers
    // only when the stop aborts it (or fails after 5 s), so no timing decides the order.
    const scripted = new ScriptedModel({
      byTask: { a: [{ tool_calls: [{ name: "t", args: { id: "a1" } }] }, { text: "a" }] },
    })
    const model: ModelClient = {
      request: (req, signal) =>
        req.context.task_id !== "b"
          ? scripted.request(req, signal)
          : new Promise((_resolve, reject) => {
              const timer = setTimeout(() => reject(new Error("b was never cancelled")), 5_000)
              signal.addEventListener("abort", () => {
                clearTimeout(timer)
                reject(signal.reason)
              })
            }),
    }
    const err = await failed(runPlan(plan, { model, tools: [tool], budget: { request_limit: 2 } }))
    expect(err.result.failure).toMatchObject({
      reason: "request_limit",
      task_id: "a",
      message: "The next request would exceed the request_limit of 2 (requests=2)",
    })
    expect(err.result.usage.requests).toBe(2)
  })
})
