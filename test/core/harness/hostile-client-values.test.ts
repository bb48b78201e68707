// Values a model client or tool hands back that are not what the types say: the result is frozen deeply and its
// failure built from the error, so an object where a string belongs (a cycle) or an error whose getters throw used
// to leave the run unsettled, with an uncaught RangeError or an unhandled rejection.
import { describe, expect, it } from "vitest"
import {
  type ModelResponse,
  planningFailed,
  type RunResult,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { failed, recorder, task } from "./helpers.ts"

const cyclic = (): Record<string, unknown> => {
  const o: Record<string, unknown> = {}
  o.self = o
  return o
}

/** Settles within `ms` or fails the test instead of hanging the suite. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

const plan = { tasks: [task("a")], output_task_id: "a" }

describe("a model client's reply fields that are not strings", () => {
  it("a cyclic finish_reason, model_name and provider_name: the run succeeds and the sample keeps strings only", async () => {
    const reply = {
      parts: [{ type: "text", text: "ok" }],
      finish_reason: cyclic(),
      model_name: cyclic(),
      provider_name: cyclic(),
    } as unknown as ModelResponse
    let calls = 0
    const { events, onEvent } = recorder()
    const r: RunResult = await within(
      runPlan(
        plan,
        {
          model: {
            request: async () => {
              calls++
              return reply
            },
          },
          model_name: "p:m",
        },
        { onEvent },
      ),
      2000,
    )
    expect(r.status).toBe("succeeded")
    expect(calls).toBe(1)
    expect(r.model_requests).toHaveLength(1)
    const s = r.model_requests[0]!
    expect([s.model_name, s.provider_name, s.finish_reason]).toEqual(["p:m", "p", undefined])
    expect(events.filter((e) => e.type === "model_request_finished")).toHaveLength(1)
    expect(Object.isFrozen(r.model_requests[0])).toBe(true)
  })
})

describe("an Error whose fields are hostile", () => {
  const weird: Array<[string, () => Error]> = [
    ["a cyclic name", () => Object.assign(new Error("boom"), { name: cyclic() })],
    [
      "a message getter that throws",
      () =>
        Object.defineProperty(new Error("x"), "message", {
          get: () => {
            throw new Error("gotcha")
          },
        }),
    ],
    ["an object message", () => Object.assign(new Error("x"), { message: cyclic() })],
  ]
  for (const [name, make] of weird) {
    it(`${name}, thrown by the model: the run fails with task_failed and string fields`, async () => {
      let calls = 0
      const { events, onEvent } = recorder()
      const e = await within(
        failed(
          runPlan(
            plan,
            {
              model: {
                request: async () => {
                  calls++
                  throw make()
                },
              },
            },
            { onEvent },
          ),
        ),
        2000,
      )
      expect(calls).toBe(1)
      const f = e.result.failure!
      expect(f.reason).toBe("task_failed")
      expect(f.task_id).toBe("a")
      expect(typeof f.message).toBe("string")
      expect(typeof f.error_type).toBe("string")
      expect(typeof e.result.model_requests[0]?.error_type).toBe("string")
      expect(events.filter((ev) => ev.type === "task_failed")).toHaveLength(1)
      expect(events.filter((ev) => ev.type === "run_finished")).toHaveLength(1)
    })

    it(`${name}, as a planning failure: planningFailed returns a frozen result with string fields`, () => {
      const e = planningFailed({ error: make() })
      expect(Object.isFrozen(e.result.failure)).toBe(true)
      expect(typeof e.result.failure?.message).toBe("string")
      expect(typeof e.result.failure?.error_type).toBe("string")
    })
  }
})
