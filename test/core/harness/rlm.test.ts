// RLM-01..03: sub-queries are child agents at depth + 1 on the run's one budget, request cap and samples.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelRequest,
  rlmParallelTool,
  rlmQueryTool,
  runPlan,
  ScriptedModel,
  type ScriptStep,
  sleep,
} from "../../../src/core/harness/index.ts"
import { failed, task } from "./helpers.ts"

const single = { tasks: [task("t")], output_task_id: "t" }
const lastTool = (req: ModelRequest) => req.messages.filter((m) => m.role === "tool").at(-1)?.content ?? ""
const userText = (req: ModelRequest) => (req.messages[0] as { content: string }).content

describe("RLM sub-queries", () => {
  it("RLM-01: past max_depth the model gets a tool error and the run goes on", async () => {
    const recurse = (req: ModelRequest, call: number): ScriptStep =>
      call === 0
        ? { tool_calls: [{ name: "rlm_query", args: { prompt: `deeper than ${req.context.depth}` } }] }
        : { text: `depth ${req.context.depth} saw: ${lastTool(req)}` }
    const model = new ScriptedModel({ fallback: recurse })
    const result = await runPlan(single, { model, tools: [rlmQueryTool()], rlm: { max_depth: 1 } })
    expect(result.status).toBe("succeeded")
    expect(result.output).toBe("depth 0 saw: depth 1 saw: recursion depth exceeded (max 1)")
    expect(model.requests.map((r) => r.context.depth)).toEqual([0, 1, 1, 0])
    expect(result.model_requests.map((s) => s.depth)).toEqual([0, 1, 1, 0])
    // Each sub-query is its own child run with a fresh, one-message history.
    const child = model.requests[1] as ModelRequest
    expect(child.messages).toHaveLength(1)
    expect(child.context.run_id).not.toBe(model.requests[0]?.context.run_id)
    expect(result.usage.requests).toBe(4)
    expect(result.usage.tool_calls).toBe(2)
    // Unset, max_depth is 3: sub-queries reach depth 3, and depth 3's own sub-query is the tool error.
    const byDefault = new ScriptedModel({ fallback: recurse })
    const deep = await runPlan(single, { model: byDefault, tools: [rlmQueryTool()] })
    expect(byDefault.requests.map((r) => r.context.depth)).toEqual([0, 1, 2, 3, 3, 2, 1, 0])
    expect(deep.output).toBe(
      "depth 0 saw: depth 1 saw: depth 2 saw: depth 3 saw: recursion depth exceeded (max 3)",
    )
  })

  it("RLM-02: sub-queries share the request cap, and a parent holds no permit while it waits (capacity 1)", async () => {
    let inFlight = 0
    let peak = 0
    const model = new ScriptedModel({
      byTask: {
        t: [
          {
            tool_calls: [
              { name: "rlm_parallel", args: { queries: [1, 2, 3, 4, 5].map((n) => ({ prompt: `q${n}` })) } },
            ],
          },
          { text: "joined" },
        ],
        "t@1": async () => {
          peak = Math.max(peak, ++inFlight)
          await new Promise((r) => setTimeout(r, 10))
          inFlight--
          return { text: "sub" }
        },
      },
    })
    const result = await runPlan(single, {
      model,
      tools: [rlmParallelTool({ maxFanOut: 5 })],
      budget: { max_concurrent_requests: 1 },
    })
    expect(result.output).toBe("joined")
    expect(peak).toBe(1)
    expect(model.peakInFlight).toBe(1)
    expect(result.model_requests_total).toBe(7)

    const two = new ScriptedModel({
      byTask: {
        t: [
          {
            tool_calls: [
              { name: "rlm_parallel", args: { queries: [1, 2, 3, 4, 5].map((n) => ({ prompt: `q${n}` })) } },
            ],
          },
          { text: "ok" },
        ],
        "t@1": [{ text: "sub", delay_ms: 10 }],
      },
    })
    await runPlan(single, {
      model: two,
      tools: [rlmParallelTool({ maxFanOut: 5 })],
      budget: { max_concurrent_requests: 2 },
    })
    expect(two.peakInFlight).toBe(2)
  })

  it("RLM-02: rlm_parallel runs at most max_concurrent_requests sub-queries at once, by default and with maxFanOut", async () => {
    // Each sub-query calls a slow tool between its two requests, holding no permit meanwhile: only the fan-out
    // bound keeps more sub-queries from being under way than the run allows requests. It used to be a fixed 4.
    const peakSubQueries = async (max_concurrent_requests: number, maxFanOut?: number) => {
      let running = 0
      let peak = 0
      const work: HarnessTool = {
        name: "work",
        parameters: {},
        async execute() {
          peak = Math.max(peak, ++running)
          await sleep(20)
          running--
          return "done"
        },
      }
      const queries = Array.from({ length: 6 }, (_, n) => ({ prompt: `q${n}` }))
      const model = new ScriptedModel({
        byTask: {
          t: [{ tool_calls: [{ name: "rlm_parallel", args: { queries } }] }, { text: "joined" }],
          "t@1": (_req, call) => (call === 0 ? { tool_calls: [{ name: "work" }] } : { text: "sub" }),
        },
      })
      const result = await runPlan(single, {
        model,
        tools: [rlmParallelTool(maxFanOut === undefined ? {} : { maxFanOut }), work],
        budget: { max_concurrent_requests },
      })
      expect(result.output).toBe("joined")
      expect(result.usage.tool_calls).toBe(7)
      return peak
    }
    expect(await peakSubQueries(2)).toBe(2)
    expect(await peakSubQueries(8)).toBe(6)
    expect(await peakSubQueries(2, 5)).toBe(2)
    expect(await peakSubQueries(8, 3)).toBe(3)
  })

  it("rlm_parallel refuses a fan-out that could never start a sub-query, when it is built", () => {
    for (const maxFanOut of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => rlmParallelTool({ maxFanOut }), String(maxFanOut)).toThrow(
        expect.objectContaining({ code: "invalid_option", message: expect.stringContaining("maxFanOut") }),
      )
    expect(rlmParallelTool({ maxFanOut: 1 }).name).toBe("rlm_parallel")
  })

  it("RLM-02: sub-queries draw on the run's request limit, and a trip stops the whole run", async () => {
    const model = new ScriptedModel({
      byTask: {
        t: [
          {
            tool_calls: [
              { name: "rlm_parallel", args: { queries: [1, 2, 3, 4, 5].map((n) => ({ prompt: `q${n}` })) } },
            ],
          },
          { text: "never" },
        ],
        "t@1": [{ text: "sub", delay_ms: 5 }],
      },
    })
    const err = await failed(
      runPlan(single, { model, tools: [rlmParallelTool()], budget: { request_limit: 4 } }),
    )
    expect(err.result.reason).toBe("request_limit")
    expect(err.result.failure?.task_id).toBe("t")
    expect(model.requests.length).toBeLessThanOrEqual(4)
    expect(err.result.usage.requests).toBe(model.requests.length)
  })

  it("RLM-03: parallel sub-calls come back in input order, with error objects in place of throws", async () => {
    const model = new ScriptedModel({
      byTask: {
        t: [
          {
            tool_calls: [
              {
                name: "rlm_parallel",
                args: {
                  queries: [
                    { prompt: "slow one" },
                    { prompt: "bad one" },
                    { prompt: "fast one", context: "CTX" },
                    { prompt: "" },
                  ],
                },
              },
            ],
          },
          { text: "fin" },
        ],
        "t@1": (req) => {
          const p = userText(req)
          if (p.startsWith("bad")) return { error: "child model failed" }
          return {
            text: `answer to ${p.split("\n")[0]}${p.includes("CTX") ? " with context" : ""}`,
            delay_ms: p.startsWith("slow") ? 30 : 1,
          }
        },
      },
    })
    const result = await runPlan(single, { model, tools: [rlmParallelTool()] })
    expect(result.output).toBe("fin")
    const toolReturn = JSON.parse(lastTool(model.requests.at(-1) as ModelRequest))
    expect(toolReturn).toEqual([
      { ok: true, value: "answer to slow one" },
      { ok: false, error: "child model failed" },
      { ok: true, value: "answer to fast one with context" },
      { ok: false, error: "rlm_query needs a non-empty string `prompt`." },
    ])
  })

  it("a sub-query spawned without an await that fails while its tool is busy is no unhandled rejection", async () => {
    // Node ends the process on one; workerd and browsers report it. Watched where the runtime lets a test see it.
    const unhandled: unknown[] = []
    const onNode = (e: unknown) => unhandled.push(e)
    const onWeb = (e: Event) => {
      unhandled.push((e as PromiseRejectionEvent).reason)
      e.preventDefault()
    }
    const proc = typeof process !== "undefined" && typeof process.on === "function" ? process : null
    proc?.on("unhandledRejection", onNode)
    globalThis.addEventListener?.("unhandledrejection", onWeb)
    try {
      const fire: HarnessTool = {
        name: "fire",
        parameters: { type: "object" },
        execute: async (_args, ctx) => {
          ctx.spawn({ prompt: "fails" }) // never awaited
          const empty = ctx.spawn({ prompt: "" }) // rejected at once, awaited last
          const answer = await ctx.spawn({ prompt: "fine" })
          await sleep(30)
          return `${answer}; ${await empty.catch((e: Error) => e.message)}`
        },
      }
      const model = new ScriptedModel({
        byTask: {
          t: (req, call) => (call === 0 ? { tool_calls: [{ name: "fire" }] } : { text: lastTool(req) }),
          "t@1": (req) =>
            userText(req) === "fails" ? { error: "child model failed" } : { text: "sub answer" },
        },
      })
      const result = await runPlan(single, { model, tools: [fire] })
      await sleep(20)
      expect(result.output).toBe("sub answer; a sub-query needs a non-empty prompt")
      expect(result.model_requests.map((s) => s.outcome).sort()).toEqual(["error", "ok", "ok", "ok"])
      expect(unhandled.map(String)).toEqual([])
    } finally {
      proc?.off("unhandledRejection", onNode)
      globalThis.removeEventListener?.("unhandledrejection", onWeb)
    }
  })

  it("a sub-query that never answers gives up after max_turns", async () => {
    const model = new ScriptedModel({
      byTask: {
        t: (req, call) =>
          call === 0
            ? { tool_calls: [{ name: "rlm_query", args: { prompt: "loop" } }] }
            : { text: lastTool(req) },
        "t@1": () => ({ tool_calls: [{ name: "nothing" }] }),
      },
    })
    const result = await runPlan(single, { model, tools: [rlmQueryTool()], rlm: { max_turns: 3 } })
    expect(result.output).toContain("without a final answer")
    expect(model.requests.filter((r) => r.context.depth === 1)).toHaveLength(3)
    const again = new ScriptedModel(model.options)
    expect((await runPlan(single, { model: again, tools: [rlmQueryTool()] })).output).toBe(
      "sub-query made 5 requests without a final answer (max_turns)",
    )
    expect(again.requests.filter((r) => r.context.depth === 1)).toHaveLength(5) // max_turns defaults to 5
  })
})
