// DAG-01 and BUD-09: validation happens once, before anything runs, and collects every problem.
import { describe, expect, it } from "vitest"
import {
  BudgetValidationError,
  type DependencyPlan,
  PlanValidationError,
  type RunPlan,
  runPlan,
  ScriptedModel,
  validatePlan,
} from "../../../src/core/harness/index.ts"
import { recorder, task } from "./helpers.ts"

function rejects(plan: RunPlan | DependencyPlan): PlanValidationError {
  const model = new ScriptedModel()
  const { events, onEvent } = recorder()
  let err: unknown
  try {
    void runPlan(plan, { model }, { onEvent })
  } catch (e) {
    err = e
  }
  expect(err).toBeInstanceOf(PlanValidationError)
  expect(events).toEqual([])
  expect(model.requests).toEqual([])
  return err as PlanValidationError
}

const ok = { tasks: [task("a"), task("b", ["a"])], output_task_id: "b" }

describe("plan validation (DAG-01)", () => {
  it("accepts a valid plan and fills defaults", () => {
    const p = validatePlan(ok)
    expect(p.max_concurrency).toBe(2) // min(4, number of tasks)
    expect(p.plan_id).toMatch(/^plan:[0-9a-f]{32}$/)
    expect(p.tasks[1]?.depends_on).toEqual(["a"])
    expect(p.initial_usage.requests).toBe(0)
  })

  it("empty_plan", () => {
    expect(rejects({ tasks: [], output_task_id: "x" }).problems("empty_plan")).toHaveLength(1)
  })

  it("invalid_task_id: empty, padded, longer than 128 (128 is accepted)", () => {
    const e = rejects({
      tasks: [task("a"), task(" b"), task(""), task("x".repeat(129))],
      output_task_id: "a",
    })
    expect(e.problems("invalid_task_id")).toHaveLength(3)
    const longest = "x".repeat(128)
    expect(validatePlan({ tasks: [task(longest)], output_task_id: longest }).tasks[0]?.task_id).toBe(longest)
  })

  it("empty_prompt", () => {
    const e = rejects({ tasks: [{ task_id: "a", prompt: "   " }], output_task_id: "a" })
    expect(e.code).toBe("empty_prompt")
  })

  it("duplicate_task_id", () => {
    const e = rejects({ tasks: [task("a"), task("a")], output_task_id: "a" })
    expect(e.problems("duplicate_task_id")[0]?.task_id).toBe("a")
  })

  it("self_dependency with the original's message", () => {
    const e = rejects({ tasks: [task("a", ["a"])], output_task_id: "a" })
    expect(e.problems("self_dependency")[0]?.message).toBe("task a depends on itself")
  })

  it("unknown_dependency with the original's message", () => {
    const e = rejects({ tasks: [task("a", ["ghost"])], output_task_id: "a" })
    expect(e.problems("unknown_dependency")[0]?.message).toBe("task a depends on unknown task ghost")
  })

  it("duplicate_dependency", () => {
    const e = rejects({ tasks: [task("a"), task("b", ["a", "a"])], output_task_id: "b" })
    expect(e.problems("duplicate_dependency")).toHaveLength(1)
  })

  it("cycle: 2-cycle and 3-cycle with a closed path", () => {
    const two = rejects({
      tasks: [task("a", ["b"]), task("b", ["a"]), task("out", ["a"])],
      output_task_id: "out",
    })
    expect(two.problems("cycle")[0]?.cycle).toEqual(["a", "b", "a"])
    expect(two.problems("cycle")[0]?.message).toBe("dependency cycle: a -> b -> a")
    const three = rejects({
      tasks: [task("a", ["c"]), task("b", ["a"]), task("c", ["b"]), task("o", ["c"])],
      output_task_id: "o",
    })
    expect(three.problems("cycle")[0]?.cycle).toEqual(["a", "c", "b", "a"])
  })

  it("cycle detection skips dangling edges and survives a 20,000-task chain", () => {
    const e = rejects({ tasks: [task("a", ["ghost", "b"]), task("b", ["a"])], output_task_id: "b" })
    expect(e.problems("cycle")).toHaveLength(1)
    const tasks = Array.from({ length: 20_000 }, (_, i) => task(`t${i}`, i ? [`t${i - 1}`] : []))
    expect(validatePlan({ tasks, output_task_id: "t19999", max_concurrency: 1 }).tasks).toHaveLength(20_000)
  })

  it("unknown_output_task", () => {
    expect(rejects({ tasks: [task("a")], output_task_id: "z" }).code).toBe("unknown_output_task")
  })

  it("output_not_sole_sink: another sink, or the output has dependents", () => {
    const two = rejects({ tasks: [task("a"), task("b")], output_task_id: "a" })
    expect(two.problems("output_not_sole_sink")[0]?.sinks).toEqual(["a", "b"])
    const dependent = rejects({ tasks: [task("a"), task("b", ["a"])], output_task_id: "a" })
    expect(dependent.problems("output_not_sole_sink")[0]?.sinks).toEqual(["b"])
  })

  it("invalid_max_concurrency", () => {
    for (const mc of [0, 65, 1.5, Number.NaN, "2" as unknown as number])
      expect(rejects({ ...ok, max_concurrency: mc }).code).toBe("invalid_max_concurrency")
    expect(validatePlan({ ...ok, max_concurrency: 64 }).max_concurrency).toBe(2)
  })

  it("invalid_initial_usage and invalid_initial_elapsed", () => {
    const u = rejects({ dependency_plan: ok, initial_usage: { requests: -1, input_tokens: 1.5 } })
    expect(u.problems("invalid_initial_usage")).toHaveLength(2)
    for (const s of [-1, Number.POSITIVE_INFINITY, Number.NaN])
      expect(rejects({ dependency_plan: ok, initial_elapsed_seconds: s }).code).toBe(
        "invalid_initial_elapsed",
      )
  })

  it("collects every problem at once", () => {
    const e = rejects({
      tasks: [task("a", ["a"]), task("a"), task("b", ["x"]), { task_id: "c", prompt: "" }],
      output_task_id: "nope",
      max_concurrency: 0,
    })
    expect(new Set(e.details.problems.map((p) => p.code))).toEqual(
      new Set([
        "self_dependency",
        "duplicate_task_id",
        "unknown_dependency",
        "empty_prompt",
        "unknown_output_task",
        "invalid_max_concurrency",
      ]),
    )
    expect(e.message).toContain("nothing was dispatched")
  })

  it("rejects garbage input without crashing", () => {
    expect(() => validatePlan(null as unknown as DependencyPlan)).toThrow(PlanValidationError)
    expect(() => validatePlan({ tasks: [null], output_task_id: "a" } as unknown as DependencyPlan)).toThrow(
      PlanValidationError,
    )
    // A hole is not skipped: it is reported as a task without a valid id, with the plan's own error.
    const sparse: DependencyPlan["tasks"][number][] = []
    sparse[1] = task("a")
    const e = rejects({ tasks: sparse, output_task_id: "a" })
    expect(e.code).toBe("invalid_task_id")
    expect(e.problems("invalid_task_id")[0]?.message).toContain("task #0")
  })

  // Every dependency problem named the whole task id and dependency: 600 of them made a message too long to build
  // (RangeError: Invalid string length).
  it("a planner's 1 MB ids and values: a bounded message, every problem kept in details", () => {
    const big = "x".repeat(1_000_000)
    const deps = rejects({
      tasks: [
        { task_id: "a", prompt: "p", depends_on: [...Array<string>(599).fill(big), { k: big } as never] },
      ],
      output_task_id: "a",
    })
    expect(deps.code).toBe("unknown_dependency")
    expect(deps.details.problems).toHaveLength(600)
    expect(deps.problems("duplicate_dependency")).toHaveLength(598)
    expect(deps.message.length).toBeLessThan(30_000)
    expect(deps.message).toContain("; and 550 more (see details.problems)")
    const id = "t".repeat(1_000_000)
    const longId = rejects({
      tasks: [{ task_id: id, prompt: "p", depends_on: Array.from({ length: 600 }, (_, i) => `d${i}`) }],
      output_task_id: "t",
    })
    expect(longId.code).toBe("invalid_task_id")
    expect(longId.details.problems).toHaveLength(602)
    expect(longId.problems("unknown_dependency")[0]?.task_id).toBe(id)
    expect(longId.message.length).toBeLessThan(30_000)
  })
})

describe("budget validation (BUD-09)", () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ request_limit: -1 }, "invalid_limit"],
    [{ tool_calls_limit: 1.5 }, "invalid_limit"],
    [{ total_tokens_limit: "10" }, "invalid_limit"],
    [{ max_concurrent_requests: 0 }, "invalid_concurrency"],
    [{ max_parallel_tool_calls: 2.5 }, "invalid_concurrency"],
    [{ deadline_seconds: 0 }, "invalid_deadline"],
    [{ deadline_seconds: Number.POSITIVE_INFINITY }, "invalid_deadline"],
    // A list read as a budget with every field unset.
    [[] as unknown as Record<string, unknown>, "invalid_budget"],
  ]
  for (const [budget, code] of cases)
    it(`${JSON.stringify(budget)} -> ${code}`, () => {
      const { events, onEvent } = recorder()
      let err: unknown
      try {
        void runPlan(ok, { model: new ScriptedModel(), budget }, { onEvent })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(BudgetValidationError)
      expect((err as BudgetValidationError).code).toBe(code)
      expect(events).toEqual([])
    })

  it("a limit of 0 is legal", () => {
    expect(() =>
      runPlan(ok, { model: new ScriptedModel(), budget: { request_limit: 0 } }).catch(() => {}),
    ).not.toThrow()
  })
})
