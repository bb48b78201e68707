// DAG-02..07: prompts with only direct dependency outputs, slots without waves, serial order, peak concurrency,
// fail-fast with cancel-and-drain, success.
import { describe, expect, it } from "vitest"
import { InvalidOptionError, MyceliumError } from "../../../src/core/errors.ts"
import {
  type ModelRequest,
  type RunDeps,
  type RunOptions,
  runPlan,
  ScriptedModel,
  sleep,
} from "../../../src/core/harness/index.ts"
import { allStrings, checkInvariants, failed, indexOfEvent, peakRunning, recorder, task } from "./helpers.ts"

const firstRequest = (model: ScriptedModel, taskId: string): ModelRequest =>
  model.requests.find((r) => r.context.task_id === taskId && r.context.step === 0) as ModelRequest

describe("DAG driver", () => {
  it("DAG-02: a diamond's sink sees B and C in depends_on order, never A; every first request has one message", async () => {
    const model = new ScriptedModel({
      byTask: {
        A: [{ text: "alpha-output" }],
        B: [{ text: "bravo-output" }],
        C: [{ text: "" }],
        D: [{ text: "final" }],
      },
    })
    const { events, onEvent } = recorder()
    const plan = {
      tasks: [task("A"), task("B", ["A"]), task("C", ["A"]), task("D", ["C", "B"], "combine")],
      output_task_id: "D",
    }
    const result = await runPlan(plan, { model }, { onEvent })
    for (const id of ["A", "B", "C", "D"]) expect(firstRequest(model, id).messages).toHaveLength(1)
    const d = firstRequest(model, "D").messages[0] as { role: string; content: string }
    expect(d.role).toBe("user")
    expect(d.content.startsWith("combine")).toBe(true)
    expect(d.content).toContain("bravo-output")
    expect(d.content).not.toContain("alpha-output")
    expect(d.content.indexOf("### C")).toBeGreaterThan(0)
    expect(d.content.indexOf("### C")).toBeLessThan(d.content.indexOf("### B")) // depends_on order, empty C kept
    // The documented layout: prompt, blank line, header, then one `### <id>` block per dependency, blank-line separated.
    expect(d.content).toBe("combine\n\nDependency outputs:\n\n### C\n\n\n### B\nbravo-output")
    const b = firstRequest(model, "B").messages[0] as { content: string }
    expect(b.content).toContain("alpha-output")
    expect(firstRequest(model, "A").messages[0]).toEqual({ role: "user", content: "do A" })
    checkInvariants(events, result, 4)
  })

  it("DAG-03: a finished task frees its slot at once: C starts before slow A finishes", async () => {
    // A replies only once C has asked the model, so the order is decided by the driver, not by the clock: a driver
    // that waited for a whole wave would leave A waiting on the fallback timer and C after it.
    let cAsked = (): void => {}
    const cStarted = new Promise<void>((resolve) => {
      cAsked = resolve
    })
    const model = new ScriptedModel({
      byTask: {
        A: async () => {
          const stop = new AbortController()
          await Promise.race([cStarted, sleep(5_000, stop.signal).catch(() => {})])
          stop.abort()
          return { text: "a" }
        },
        B: [{ text: "b" }],
        C: () => {
          cAsked()
          return { text: "c" }
        },
      },
    })
    const { events, onEvent } = recorder()
    const plan = {
      tasks: [task("A"), task("B"), task("C", ["B"]), task("OUT", ["A", "C"])],
      output_task_id: "OUT",
      max_concurrency: 2,
    }
    const result = await runPlan(plan, { model }, { onEvent })
    expect(indexOfEvent(events, "task_started", "C")).toBeLessThan(
      indexOfEvent(events, "task_succeeded", "A"),
    )
    expect(indexOfEvent(events, "task_succeeded", "C")).toBeLessThan(
      indexOfEvent(events, "task_succeeded", "A"),
    )
    // Slots are 0-based, and C takes the slot B just freed.
    const slots = events.flatMap((e) => (e.type === "task_started" ? [[e.task_id, e.slot]] : []))
    expect(slots).toEqual([
      ["A", 0],
      ["B", 1],
      ["C", 1],
      ["OUT", 0],
    ])
    checkInvariants(events, result, 2)
  })

  it("DAG-04: max_concurrency=1 runs fully serial, in declaration order among ready tasks", async () => {
    const model = new ScriptedModel()
    const { events, onEvent } = recorder()
    const plan = {
      tasks: [task("c"), task("a"), task("b", ["a"]), task("z", ["c"]), task("out", ["b", "z"])],
      output_task_id: "out",
      max_concurrency: 1,
    }
    const result = await runPlan(plan, { model }, { onEvent })
    const order = events
      .filter((e) => e.type === "task_started")
      .map((e) => ("task_id" in e ? e.task_id : ""))
    // Ready after c: [a, z] -> a (index 1); after a: [z, b] -> b (index 2) before z (index 3).
    expect(order).toEqual(["c", "a", "b", "z", "out"])
    expect(peakRunning(events)).toBe(1)
    checkInvariants(events, result, 1)
  })

  it("DAG-05: peak concurrency equals min(max_concurrency, width)", async () => {
    const wide = (n: number) => ({
      tasks: [
        ...Array.from({ length: n }, (_, i) => task(`w${i}`)),
        task(
          "out",
          Array.from({ length: n }, (_, i) => `w${i}`),
        ),
      ],
      output_task_id: "out",
    })
    for (const [width, mc, expected] of [
      [6, 3, 3],
      [2, 5, 2],
      [5, 5, 5],
    ] as const) {
      const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 20 }] })
      const { events, onEvent } = recorder()
      const result = await runPlan(
        { ...wide(width), max_concurrency: mc },
        { model, budget: { max_concurrent_requests: 8 } },
        { onEvent },
      )
      expect(peakRunning(events)).toBe(expected)
      expect(model.peakInFlight).toBe(expected)
      checkInvariants(events, result, mc)
    }
  })

  it("DAG-06: a failing task stops dispatch, cancels and drains siblings, and leaks no output", async () => {
    // S would take 5 s; it must be aborted mid-request and settle before runPlan does.
    const aborting = new ScriptedModel({
      byTask: {
        A: [{ text: "secret-a-output" }],
        B: [{ error: new TypeError("model exploded"), delay_ms: 30 }],
        S: [{ text: "never", delay_ms: 5_000 }],
        C: [{ text: "c" }],
      },
    })
    const { events, onEvent } = recorder()
    const plan = {
      tasks: [task("A"), task("S"), task("B", ["A"]), task("C", ["B", "S"])],
      output_task_id: "C",
      max_concurrency: 3,
    }
    const err = await failed(runPlan(plan, { model: aborting }, { onEvent }))
    const r = err.result
    expect(r.status).toBe("failed")
    expect(r.reason).toBe("task_failed")
    expect(r.failure).toMatchObject({ reason: "task_failed", task_id: "B", error_type: "TypeError" })
    expect(r.output).toBeNull()
    expect(aborting.inFlight).toBe(0)
    expect(r.tasks.map((t) => [t.task_id, t.status])).toEqual([
      ["A", "succeeded"],
      ["S", "cancelled"],
      ["B", "failed"],
      ["C", "not_started"],
    ])
    expect(allStrings(r).some((s) => s.includes("secret-a-output"))).toBe(false)
    expect(allStrings(events).some((s) => s.includes("secret-a-output"))).toBe(false)
    expect(r.tasks.every((t) => t.output === undefined)).toBe(true)
    const cancelled = events.find((e) => e.type === "task_cancelled")
    expect(cancelled).toMatchObject({ task_id: "S", reason: "sibling_failed" })
    expect(r.tasks[1]?.elapsed_ms as number).toBeLessThan(2_000)
    checkInvariants(events, r, 3)
  })

  it("DAG-06: a ready task does not start once a failure stopped dispatch (max_concurrency 1)", async () => {
    const model = new ScriptedModel({ byTask: { a: [{ error: "provider 500" }], b: [{ text: "b" }] } })
    const plan = {
      tasks: [task("a"), task("b"), task("z", ["a", "b"])],
      output_task_id: "z",
      max_concurrency: 1,
    }
    const err = await failed(runPlan(plan, { model }))
    expect(err.result.reason).toBe("task_failed")
    expect(model.requests.map((r) => r.context.task_id)).toEqual(["a"])
    expect(err.result.tasks.map((t) => t.status)).toEqual(["failed", "not_started", "not_started"])
  })

  it("DAG-07: success returns the output task's text and every task's output", async () => {
    const model = new ScriptedModel({ byTask: { a: [{ text: "A!" }], b: [{ text: "the answer" }] } })
    const { events, onEvent } = recorder()
    const result = await runPlan(
      {
        dependency_plan: { tasks: [task("a"), task("b", ["a"])], output_task_id: "b", plan_id: "plan:fixed" },
      },
      { model },
      { onEvent },
    )
    expect(result).toMatchObject({
      status: "succeeded",
      reason: "completed",
      output: "the answer",
      failure: null,
    })
    expect(result.plan_id).toBe("plan:fixed")
    expect(result.run_id).toMatch(/^run:[0-9a-f]{32}$/)
    expect(result.tasks.map((t) => t.output)).toEqual(["A!", "the answer"])
    expect(Object.isFrozen(result.tasks[0])).toBe(true)
    expect(result.usage.requests).toBe(2)
    checkInvariants(events, result, 2)
  })

  it("tool-using tasks: the loop feeds tool returns back and ends on text", async () => {
    const model = new ScriptedModel({
      byTask: {
        t: [
          { tool_calls: [{ name: "add", args: { a: 2, b: 3 } }, { name: "missing" }] },
          { text: "sum is 5" },
        ],
      },
    })
    const result = await runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      {
        model,
        tools: [
          {
            name: "add",
            parameters: { type: "object" },
            execute: (args) => (args.a as number) + (args.b as number),
          },
        ],
      },
    )
    expect(result.output).toBe("sum is 5")
    const second = model.requests[1] as ModelRequest
    expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"])
    expect(second.messages[2]).toMatchObject({ content: "5" })
    expect(second.messages[3]).toMatchObject({ is_error: true })
    expect(result.usage.tool_calls).toBe(1) // an unknown tool never executes, so it does not count
  })

  it("a tool's unhandled error fails the task without waiting for its slow batch siblings", async () => {
    let slowAborted = false
    const model = new ScriptedModel({
      byTask: { t: [{ tool_calls: [{ name: "slow" }, { name: "broken" }] }, { text: "never" }] },
    })
    const t0 = performance.now()
    const err = await failed(
      runPlan(
        { tasks: [task("t")], output_task_id: "t" },
        {
          model,
          tools: [
            {
              name: "slow",
              parameters: {},
              execute: (_a, ctx) =>
                sleep(10_000, ctx.signal).catch((e) => {
                  slowAborted = true
                  throw e
                }),
            },
            {
              name: "broken",
              parameters: {},
              execute: () => {
                throw new SyntaxError("tool bug")
              },
            },
          ],
        },
      ),
    )
    expect(performance.now() - t0).toBeLessThan(2_000)
    expect(slowAborted).toBe(true)
    expect(err.result.failure).toMatchObject({
      reason: "task_failed",
      task_id: "t",
      error_type: "SyntaxError",
    })
    expect(err.result.usage.tool_calls).toBe(2)
  })
})

describe("runPlan options", () => {
  const plan = { tasks: [task("A")], output_task_id: "A" }
  const refused = (run: () => unknown) => {
    try {
      run()
    } catch (e) {
      return e
    }
    return undefined
  }

  it("a bad max_request_samples or drain_timeout_seconds is an InvalidOptionError before anything runs", () => {
    const model = new ScriptedModel({ byTask: { A: [{ text: "a" }] } })
    for (const error of [
      refused(() => runPlan(plan, { model, max_request_samples: -1 })),
      refused(() => runPlan(plan, { model, max_request_samples: Number.NaN })),
      refused(() => runPlan(plan, { model }, { drain_timeout_seconds: 0 })),
      refused(() => runPlan(plan, { model }, { drain_timeout_seconds: Number.POSITIVE_INFINITY })),
    ]) {
      expect(error).toBeInstanceOf(MyceliumError)
      expect(error).toMatchObject({ name: "InvalidOptionError", code: "invalid_option" })
    }
    expect(model.requests).toHaveLength(0)
  })

  // Left to the run, a signal without addEventListener threw after run_started (no run_finished followed), a
  // numeric model_name failed its task after the request was sent and counted, and no deps threw a TypeError.
  it("deps and options of the wrong kind are an InvalidOptionError before any event or request", () => {
    const model = new ScriptedModel()
    const { events, onEvent } = recorder()
    const cases: Array<[unknown, unknown]> = [
      [undefined, {}],
      [null, {}],
      [{}, {}],
      [{ model: {} }, {}],
      [{ model, model_name: 42 }, { onEvent }],
      [{ model }, { onEvent, signal: {} }],
      // A look-alike passes no AbortSignal check: only a real signal (from any realm) is listened to.
      [{ model }, { onEvent, signal: { aborted: false, addEventListener() {}, removeEventListener() {} } }],
      [{ model }, { onEvent, run_id: 42 }],
      [{ model }, { onEvent, run_id: "" }],
      [{ model }, { onEvent: "log" }],
      [{ model }, { onEvent, now: 0 }],
      [{ model }, "options"],
    ]
    for (const [deps, options] of cases) {
      const error = refused(() => runPlan(plan, deps as RunDeps, options as RunOptions))
      expect(error, JSON.stringify([deps, options])).toBeInstanceOf(InvalidOptionError)
      expect(error).toMatchObject({ code: "invalid_option" })
    }
    expect(events).toEqual([])
    expect(model.requests).toHaveLength(0)
  })

  it("null options, and null option fields, are unset", async () => {
    const model = new ScriptedModel()
    await expect(runPlan(plan, { model }, null as unknown as RunOptions)).resolves.toMatchObject({
      status: "succeeded",
    })
    const { events, onEvent } = recorder()
    const unset = null as unknown as undefined
    await runPlan(plan, { model, model_name: unset }, { onEvent, signal: unset, run_id: unset, now: unset })
    expect(events[0]?.run_id).toMatch(/^run:/)
    expect(model.requests.at(-1)?.model).toBe("unknown:model")
  })
})
