// A host planning step that fails after measured work: the usage is reported once, the original failure or
// cancellation is kept, nothing is dispatched.
import { describe, expect, it } from "vitest"
import { PlanValidationError, planningFailed, RunFailed } from "../../../src/core/harness/index.ts"
import { recorder } from "./helpers.ts"

describe("planningFailed", () => {
  it("keeps the original failure and counts the planning usage once", () => {
    const { events, onEvent } = recorder()
    const cause = new TypeError("planner returned garbage")
    const err = planningFailed(
      {
        error: cause,
        initial_usage: { requests: 2, input_tokens: 1200, output_tokens: 80 },
        initial_elapsed_seconds: 3.5,
      },
      { onEvent, run_id: "run:feedfeedfeedfeedfeedfeedfeedfeed" },
    )
    expect(err).toBeInstanceOf(RunFailed)
    expect(err.cause).toBe(cause)
    expect(err.result).toMatchObject({
      run_id: "run:feedfeedfeedfeedfeedfeedfeedfeed",
      status: "failed",
      reason: "planning_failed",
      output: null,
      failure: {
        reason: "planning_failed",
        task_id: null,
        error_type: "TypeError",
        message: "planner returned garbage",
      },
      usage: { requests: 2, input_tokens: 1200, output_tokens: 80, total_tokens: 1280 },
      total_elapsed_ms: 3500,
      tasks: [],
    })
    expect(Object.isFrozen(err.result.usage)).toBe(true)
    expect(events.map((e) => [e.type, e.sequence])).toEqual([
      ["run_started", 1],
      ["run_finished", 2],
    ])
    expect(events[1]).toMatchObject({ usage: { requests: 2 } })
  })

  it("a cancelled planning step stays a cancellation; invalid counters fail closed", () => {
    const aborted = planningFailed({
      error: new DOMException("stop", "AbortError"),
      initial_usage: { requests: 1 },
    })
    expect(aborted.result).toMatchObject({ status: "stopped", reason: "cancelled" })
    expect(() => planningFailed({ error: new Error("x"), initial_usage: { requests: -1 } })).toThrow(
      PlanValidationError,
    )
    expect(() => planningFailed({ error: new Error("x"), initial_elapsed_seconds: Number.NaN })).toThrow(
      "invalid_initial_elapsed",
    )
  })
})
