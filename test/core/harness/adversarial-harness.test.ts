// A hostile review of the harness: plans, models and tools that misbehave, budgets fed garbage, and cancellation.
// Each test names the attack; the ones that found a defect say what used to happen.
import { getEventListeners } from "node:events"
import { describe, expect, it } from "vitest"
import {
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  PlanValidationError,
  type RunEvent,
  RunFailed,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { failed, recorder, task } from "./helpers.ts"

const text = (t: string): ModelResponse => ({ parts: [{ type: "text", text: t }] })

/** A model whose reply per task is decided by `reply`; counts requests. */
function model(
  reply: (req: ModelRequest, signal: AbortSignal) => Promise<ModelResponse> | ModelResponse,
): ModelClient & {
  calls: number
} {
  const m = {
    calls: 0,
    request: async (req: ModelRequest, signal: AbortSignal) => {
      m.calls++
      return reply(req, signal)
    },
  }
  return m
}

/** Settles within `ms` or fails the test with a clear message instead of hanging the suite. */
async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([p, timeout])
  } finally {
    clearTimeout(timer)
  }
}

describe("a model or tool that throws something that is not an Error", () => {
  const weird: Array<[string, () => unknown]> = [
    ["a string", () => "boom"],
    ["undefined", () => undefined],
    // biome-ignore lint/suspicious/noThenProperty: the attack is a thrown thenable
    ["a thenable", () => ({ then: () => {} })],
    ["an object without a prototype", () => Object.create(null)],
    [
      "an object whose toString throws",
      () => ({
        toString() {
          throw new Error("no")
        },
      }),
    ],
    ["a symbol", () => Symbol("s")],
  ]
  for (const [name, make] of weird) {
    it(`${name}: the run fails with task_failed and settles`, async () => {
      const m = model(async () => {
        throw make()
      })
      const { events, onEvent } = recorder()
      const err = await within(
        failed(runPlan({ tasks: [task("a")], output_task_id: "a" }, { model: m }, { onEvent })),
        5_000,
      )
      expect(err.result.reason).toBe("task_failed")
      expect(err.result.failure?.task_id).toBe("a")
      expect(typeof err.result.failure?.message).toBe("string")
      expect(events.filter((e) => e.type === "task_failed")).toHaveLength(1)
      expect(events.at(-1)?.type).toBe("run_finished")
    })
  }
})

describe("budgets fed garbage by the model", () => {
  const bad: Array<[string, number]> = [
    ["negative", -1_000_000],
    ["NaN", Number.NaN],
    ["-Infinity", Number.NEGATIVE_INFINITY],
  ]
  for (const [name, value] of bad) {
    it(`${name} token counts cannot refund the shared budget`, async () => {
      // Each honest request costs 100 input tokens; the limit allows 5 of them. A model that reports a negative
      // count used to subtract it from the run's committed usage, so the limit never tripped.
      let n = 0
      const m = model(async () => {
        n++
        const usage =
          n === 1 ? { input_tokens: value, output_tokens: value } : { input_tokens: 100, output_tokens: 0 }
        return { parts: [{ type: "tool_call", id: `c${n}`, name: "noop", args: {} }], usage }
      })
      const err = await within(
        failed(
          runPlan(
            { tasks: [task("a")], output_task_id: "a" },
            {
              model: m,
              tools: [{ name: "noop", parameters: { type: "object" }, execute: async () => "ok" }],
              budget: { input_tokens_limit: 500, request_limit: 100 },
            },
          ),
        ),
        5_000,
      )
      expect(err.result.reason).toBe("input_tokens_limit")
      expect(m.calls).toBe(7) // the garbage reply, then 6 × 100 tokens: the 6th crosses 500
      expect(err.result.usage.input_tokens).toBe(600)
      expect(err.result.usage.output_tokens).toBe(0)
      for (const s of err.result.model_requests)
        expect(s.input_tokens === null || s.input_tokens >= 0).toBe(true)
    })
  }
})
