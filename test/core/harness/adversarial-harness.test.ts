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
