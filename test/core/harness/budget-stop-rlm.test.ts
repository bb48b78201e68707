// A limit refusal met inside an RLM sub-query stops the run where it is met, as one at depth 0 does, when the tool
// that spawned it passes budget stops on: rlm_query (its very promise) and rlm_parallel (it halts on one).
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type ResponsePart,
  rlmParallelTool,
  rlmQueryTool,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { checkInvariants, failed, recorder, task } from "./helpers.ts"

/** a's sub-query and b's first request answer in one macrotask; a's first request answers at once. */
function subQueryModel(aFirst: ResponsePart): ModelClient & { sent: string[] } {
  let open = 0
  let release: () => void = () => {}
  const gate = new Promise<void>((r) => {
    release = r
  })
  const sent: string[] = []
  return {
    sent,
    async request(req: ModelRequest, signal) {
      const { task_id, depth, step } = req.context
      sent.push(`${task_id}/${depth}#${step}`)
      if (task_id === "a" && depth === 0)
        return { parts: [step === 0 ? aFirst : { type: "text", text: "a" }] }
      if (step > 0) return { parts: [{ type: "text", text: "late" }] }
      // b's waits after the sub-query's, so the sub-query's answer is the first handled.
      if (depth === 0) await new Promise((r) => setTimeout(r, 2))
      if (++open === 2) setTimeout(release, 5)
      await gate
      if (signal.aborted) throw signal.reason
      // The sub-query's two calls would exceed the limit of 2 (a's rlm call holds one); b's one would not.
      const ids = depth > 0 ? ["s1", "s2"] : ["b1"]
      return { parts: ids.map((id): ResponsePart => ({ type: "tool_call", id, name: "t", args: { id } })) }
    },
  }
}

function countingTool(): HarnessTool & { runs: string[] } {
  const runs: string[] = []
  return { name: "t", parameters: { type: "object" }, runs, execute: (args) => runs.push(String(args.id)) }
}

const plan = { tasks: [task("a"), task("b"), task("z", ["a", "b"])], output_task_id: "z", max_concurrency: 2 }

describe("a limit refusal inside a sub-query stops the run where it is met", () => {
  const cases: Array<[string, HarnessTool, ResponsePart]> = [
    ["rlm_query", rlmQueryTool(), { type: "tool_call", id: "q", name: "rlm_query", args: { prompt: "sub" } }],
    [
      "rlm_parallel",
      rlmParallelTool(),
      { type: "tool_call", id: "q", name: "rlm_parallel", args: { queries: [{ prompt: "sub" }] } },
    ],
    [
      "rlm_parallel spread with another description",
      { ...rlmParallelTool(), description: "Ask at once." },
      { type: "tool_call", id: "q", name: "rlm_parallel", args: { queries: [{ prompt: "sub" }] } },
    ],
  ]
  for (const [name, rlm, first] of cases)
    it(`${name}: a sibling's tool batch that lands in the same tick never runs`, async () => {
      const tool = countingTool()
      const model = subQueryModel(first)
      const { events, onEvent } = recorder()
      const err = await failed(
        runPlan(plan, { model, tools: [tool, rlm], budget: { tool_calls_limit: 2 } }, { onEvent }),
      )
      expect(err.result.failure).toMatchObject({ reason: "tool_calls_limit", task_id: "a" })
      expect(tool.runs).toEqual([])
      expect(err.result.usage.tool_calls).toBe(1) // a's rlm call only
      expect(model.sent).toEqual(["a/0#0", "b/0#0", "a/1#0"])
      checkInvariants(events, err.result, 2)
    })
})

describe("a refusal a custom tool catches does not stop the run", () => {
  it("a tool that awaits its sub-query and answers in its place: the run goes on", async () => {
    const tool = countingTool()
    const catching: HarnessTool = {
      name: "ask",
      parameters: { type: "object" },
      async execute(_args, ctx) {
        try {
          return await ctx.spawn({ prompt: "sub" })
        } catch (e) {
          return `no answer: ${(e as Error).name}`
        }
      },
    }
    // a asks (1 call); its sub-query's batch of 2 would exceed the limit of 2; then a's own single call fits.
    const model: ModelClient = {
      async request(req) {
        const { task_id, depth, step } = req.context
        const call = (id: string, name = "t"): ResponsePart => ({ type: "tool_call", id, name, args: { id } })
        if (task_id !== "a") return { parts: [{ type: "text", text: task_id }] }
        if (depth > 0) return { parts: [call("s1"), call("s2")] }
        const parts = [[call("q", "ask")], [call("a1")], [{ type: "text", text: "a" } as ResponsePart]][step]
        return { parts: parts ?? [] }
      },
    }
    const seq = { tasks: [task("a"), task("z", ["a"])], output_task_id: "z", max_concurrency: 2 }
    const result = await runPlan(seq, { model, tools: [tool, catching], budget: { tool_calls_limit: 2 } })
    expect(result.status).toBe("succeeded")
    expect(tool.runs).toEqual(["a1"])
    expect(result.usage.tool_calls).toBe(2)
  })
})

describe("a tool built from rlm_parallel's own object", () => {
  it("a spread of rlm_parallel whose execute handles the refusal keeps the run going", async () => {
    const tool = countingTool()
    const base = rlmParallelTool()
    // Spreading a built-in tool to wrap its execute copies its symbol-keyed marks with it.
    const tolerant: HarnessTool = {
      ...base,
      name: "fan",
      async execute(args, ctx) {
        try {
          return await base.execute(args, ctx)
        } catch (e) {
          return `no answer: ${(e as Error).name}`
        }
      },
    }
    const model: ModelClient = {
      async request(req) {
        const { task_id, depth, step } = req.context
        const call = (id: string, name = "t", args: Record<string, unknown> = { id }): ResponsePart => ({
          type: "tool_call",
          id,
          name,
          args,
        })
        if (task_id !== "a") return { parts: [{ type: "text", text: task_id }] }
        if (depth > 0) return { parts: [call("s1"), call("s2")] }
        const first = call("q", "fan", { queries: [{ prompt: "sub" }] })
        const parts = [[first], [call("a1")], [{ type: "text", text: "a" } as ResponsePart]][step]
        return { parts: parts ?? [] }
      },
    }
    const seq = { tasks: [task("a"), task("z", ["a"])], output_task_id: "z", max_concurrency: 2 }
    const result = await runPlan(seq, { model, tools: [tool, tolerant], budget: { tool_calls_limit: 2 } })
    expect(result.status).toBe("succeeded")
    expect(tool.runs).toEqual(["a1"])
    expect(result.usage.tool_calls).toBe(2)
  })
})
