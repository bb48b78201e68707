// Randomised plans, scripts and limits: whatever the interleaving, the shared budget is never overshot, counts
// add up, nothing is left in flight, and the event invariants hold.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  RunFailed,
  type RunResult,
  type RunTask,
  runPlan,
  ScriptedModel,
  sleep,
} from "../../../src/core/harness/index.ts"
import { checkInvariants, recorder } from "./helpers.ts"

const arbCase = fc.record({
  n: fc.integer({ min: 1, max: 10 }),
  edges: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 20 }),
  calls: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 10, maxLength: 10 }),
  delays: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 10, maxLength: 10 }),
  requestLimit: fc.option(fc.integer({ min: 0, max: 25 }), { nil: undefined }),
  toolLimit: fc.option(fc.integer({ min: 0, max: 15 }), { nil: undefined }),
  initialRequests: fc.integer({ min: 0, max: 3 }),
  mc: fc.integer({ min: 1, max: 6 }),
  mcr: fc.integer({ min: 1, max: 4 }),
})

describe("harness properties", () => {
  it("budgets hold under random interleavings", async () => {
    await fc.assert(
      fc.asyncProperty(arbCase, async (c) => {
        // Edges only point backwards, so the graph is a DAG; a final sink joins every other sink.
        const deps = Array.from({ length: c.n }, () => new Set<number>())
        for (const [a, b] of c.edges) {
          const hi = a % c.n
          const lo = b % c.n
          if (lo < hi) deps[hi]?.add(lo)
        }
        const tasks: RunTask[] = deps.map((d, i) => ({
          task_id: `t${i}`,
          prompt: `p${i}`,
          depends_on: [...d].map((j) => `t${j}`),
        }))
        const hasDependent = new Set(tasks.flatMap((t) => t.depends_on ?? []))
        tasks.push({
          task_id: "out",
          prompt: "join",
          depends_on: tasks.filter((t) => !hasDependent.has(t.task_id)).map((t) => t.task_id),
        })
        let toolRuns = 0
        let toolsInFlight = 0
        const tool: HarnessTool = {
          name: "work",
          parameters: {},
          async execute(_a, ctx) {
            toolRuns++
            toolsInFlight++
            try {
              await sleep(1, ctx.signal)
            } finally {
              toolsInFlight--
            }
            return "ok"
          },
        }
        const model = new ScriptedModel({
          fallback: (req, call) => {
            const i = Number(req.context.task_id.slice(1)) || 0
            const k = c.calls[i % 10] as number
            const delay_ms = c.delays[(i + call) % 10] as number
            return call < k
              ? { delay_ms, tool_calls: Array.from({ length: 1 + (call % 2) }, () => ({ name: "work" })) }
              : { delay_ms, text: `answer ${req.context.task_id}` }
          },
        })
        const { events, onEvent } = recorder()
        let result: RunResult
        try {
          result = await runPlan(
            {
              dependency_plan: { tasks, output_task_id: "out", max_concurrency: c.mc },
              initial_usage: { requests: c.initialRequests },
            },
            {
              model,
              tools: [tool],
              budget: {
                max_concurrent_requests: c.mcr,
                ...(c.requestLimit !== undefined ? { request_limit: c.requestLimit } : {}),
                ...(c.toolLimit !== undefined ? { tool_calls_limit: c.toolLimit } : {}),
              },
            },
            { onEvent },
          )
          expect(result.output).toBe("answer out")
        } catch (e) {
          expect(e).toBeInstanceOf(RunFailed)
          result = (e as RunFailed).result
          expect(result.output).toBeNull()
          expect(["request_limit", "tool_calls_limit"]).toContain(result.reason)
        }
        expect(model.inFlight).toBe(0)
        expect(toolsInFlight).toBe(0)
        expect(model.peakInFlight).toBeLessThanOrEqual(c.mcr)
        expect(result.usage.requests).toBe(c.initialRequests + model.requests.length)
        expect(result.usage.tool_calls).toBe(toolRuns)
        if (c.requestLimit !== undefined)
          expect(result.usage.requests).toBeLessThanOrEqual(Math.max(c.requestLimit, c.initialRequests))
        if (c.toolLimit !== undefined) expect(toolRuns).toBeLessThanOrEqual(c.toolLimit)
        checkInvariants(events, result, Math.min(c.mc, tasks.length))
      }),
      { numRuns: 60 },
    )
  }, 60_000)
})
