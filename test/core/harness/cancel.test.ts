// CAN-01..04: abort and deadline drain every task before the promise settles; the first stop cause wins;
// RunFailed carries a deeply frozen result.
import { describe, expect, it } from "vitest"
import {
  type ModelClient,
  RunFailed,
  runPlan,
  ScriptedModel,
  sleep,
} from "../../../src/core/harness/index.ts"
import { checkInvariants, failed, recorder, task, taskEvents } from "./helpers.ts"

const plan = {
  tasks: [task("a"), task("b"), task("c"), task("d", ["a"]), task("out", ["b", "c", "d"])],
  output_task_id: "out",
  max_concurrency: 3,
}

describe("cancellation and deadline", () => {
  it("CAN-01: an abort mid-run drains every task, cancels in-flight samples, and emits run_finished last", async () => {
    const model = new ScriptedModel({
      byTask: { a: [{ text: "a", delay_ms: 5 }] },
      fallback: [{ text: "slow", delay_ms: 10_000 }],
    })
    const controller = new AbortController()
    const { events, onEvent } = recorder()
    const running = runPlan(plan, { model }, { signal: controller.signal, onEvent })
    // Abort once d (dependent of a) has started: a mix of finished, running and never-started tasks.
    while (!events.some((e) => e.type === "task_started" && e.task_id === "d")) await sleep(1)
    await sleep(5)
    controller.abort()
    const err = await failed(running)
    expect(model.inFlight).toBe(0) // nothing in flight once the promise has settled
    expect(err.result).toMatchObject({ status: "stopped", reason: "cancelled", output: null })
    expect(err.result.failure).toMatchObject({ reason: "cancelled", task_id: null })
    const statuses = Object.fromEntries(err.result.tasks.map((t) => [t.task_id, t.status]))
    expect(statuses).toEqual({
      a: "succeeded",
      b: "cancelled",
      c: "cancelled",
      d: "cancelled",
      out: "not_started",
    })
    const inFlight = err.result.model_requests.filter((s) => s.task_id !== "a")
    expect(inFlight).toHaveLength(3)
    expect(inFlight.every((s) => s.outcome === "cancelled")).toBe(true)
    for (const id of ["b", "c", "d"])
      expect(taskEvents(events, id).filter((e) => e.type === "task_cancelled")).toEqual([
        expect.objectContaining({ reason: "cancelled" }),
      ])
    checkInvariants(events, err.result, 3)
    const count = events.length
    await sleep(20)
    expect(events).toHaveLength(count) // no events after run_finished
  })

  it("CAN-01: runPlan waits for a slow tool to honour the abort before it settles", async () => {
    let toolSettled = false
    const model = new ScriptedModel({ byTask: { t: [{ tool_calls: [{ name: "slow" }] }, { text: "x" }] } })
    const controller = new AbortController()
    const running = runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      {
        model,
        tools: [
          {
            name: "slow",
            parameters: {},
            async execute(_args, ctx) {
              try {
                await sleep(10_000, ctx.signal)
              } catch {
                await sleep(30) // cleanup after the abort: the run must wait for it
              } finally {
                toolSettled = true
              }
            },
          },
        ],
      },
      { signal: controller.signal },
    )
    await sleep(20)
    controller.abort()
    const err = await failed(running)
    expect(toolSettled).toBe(true)
    expect(err.result.reason).toBe("cancelled")
  })

  it("CAN-01: an abort reaches a running tool batch: its queued calls never start", async () => {
    let started = 0
    const model = new ScriptedModel({
      byTask: { t: [{ tool_calls: [{ name: "slow" }, { name: "slow" }, { name: "slow" }] }, { text: "x" }] },
    })
    const controller = new AbortController()
    const running = runPlan(
      { tasks: [task("t")], output_task_id: "t" },
      {
        model,
        tools: [
          {
            name: "slow",
            parameters: {},
            execute: (_args, ctx) => {
              started++
              return sleep(100, ctx.signal)
            },
          },
        ],
        budget: { max_parallel_tool_calls: 1 },
      },
      { signal: controller.signal },
    )
    while (started === 0) await sleep(1)
    controller.abort()
    const err = await failed(running)
    expect(err.result.reason).toBe("cancelled")
    expect(started).toBe(1)
    expect(err.result.usage.tool_calls).toBe(1)
  })

  it("CAN-01: a pre-aborted signal dispatches nothing", async () => {
    const model = new ScriptedModel()
    const { events, onEvent } = recorder()
    const err = await failed(runPlan(plan, { model }, { signal: AbortSignal.abort(), onEvent }))
    expect(err.result.reason).toBe("cancelled")
    expect(model.requests).toHaveLength(0)
    expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
  })

  it("CAN-02: the deadline counts initial_elapsed_seconds", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "slow", delay_ms: 60_000 }] })
    const { events, onEvent } = recorder()
    const t0 = performance.now()
    const err = await failed(
      runPlan(
        { dependency_plan: plan, initial_elapsed_seconds: 9.95 },
        { model, budget: { deadline_seconds: 10 } },
        { onEvent },
      ),
    )
    const took = performance.now() - t0
    // 50 ms left, not the full 10 s: a deadline that ignored the elapsed time would take 10 s, so the bound can be
    // wide enough that a loaded machine cannot fail it.
    expect(took).toBeLessThan(5_000)
    expect(err.result).toMatchObject({ status: "stopped", reason: "deadline" })
    expect(err.result.failure?.task_id).toBeNull()
    expect(err.result.total_elapsed_ms).toBeCloseTo(9_950 + err.result.run_elapsed_ms, 5)
    expect(
      events
        .filter((e) => e.type === "task_cancelled")
        .every((e) => "reason" in e && e.reason === "deadline"),
    ).toBe(true)
    expect(model.inFlight).toBe(0)
    checkInvariants(events, err.result, 3)
  })

  it("CAN-02: initial_elapsed_seconds >= deadline stops before dispatch", async () => {
    const model = new ScriptedModel()
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(
        { dependency_plan: plan, initial_elapsed_seconds: 2 },
        { model, budget: { deadline_seconds: 2 } },
        { onEvent },
      ),
    )
    expect(err.result.reason).toBe("deadline")
    expect(model.requests).toHaveLength(0)
    expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
  })

  it("CAN-03: first cause wins: a task failure, then the deadline during the drain, stays task_failed", async () => {
    // The sibling ignores its abort for 150 ms, so the 100 ms deadline passes while the run drains.
    const stubborn: ModelClient = {
      async request(req) {
        if (req.context.task_id === "a") {
          await sleep(10)
          throw new Error("a broke")
        }
        await sleep(150)
        return { parts: [{ type: "text", text: "late" }] }
      },
    }
    const { events, onEvent } = recorder()
    const err = await failed(
      runPlan(
        { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
        { model: stubborn, budget: { deadline_seconds: 0.1 } },
        { onEvent },
      ),
    )
    expect(err.result).toMatchObject({ status: "failed", reason: "task_failed" })
    expect(err.result.failure).toMatchObject({ task_id: "a", message: "a broke", error_type: "Error" })
    expect(err.result.tasks[1]?.status).toBe("cancelled") // its late success is discarded
    expect(err.result.tasks[1]?.usage.requests).toBe(1) // but its request counts
    expect(err.result.run_elapsed_ms).toBeGreaterThanOrEqual(140)
    checkInvariants(events, err.result, 3)
  })

  it("CAN-04: RunFailed is an Error whose result is deeply frozen", async () => {
    const model = new ScriptedModel({ fallback: [{ error: "boom" }] })
    const err = await failed(runPlan({ tasks: [task("a")], output_task_id: "a" }, { model }))
    expect(err).toBeInstanceOf(Error)
    expect(err).toBeInstanceOf(RunFailed)
    expect(err.name).toBe("RunFailed")
    expect(err.code).toBe("run_failed")
    expect(err.message).toContain("task_failed")
    expect(err.message).toContain("'a'")
    expect(err.run_id).toBe(err.result.run_id)
    const r = err.result as unknown as Record<string, unknown> & {
      usage: { details: Record<string, number> }
    }
    expect(() => {
      r.status = "succeeded"
    }).toThrow(TypeError)
    expect(() => {
      r.usage.details.x = 1
    }).toThrow(TypeError)
    expect(() => (err.result.tasks as unknown as unknown[]).push(1)).toThrow(TypeError)
    expect(Object.isFrozen(err.result.failure)).toBe(true)
  })

  /** One task on `model`, cancelled 10 ms in, with a 50 ms drain. */
  async function cancelledWhileDraining(model: ModelClient) {
    const controller = new AbortController()
    const running = runPlan(
      { tasks: [task("a")], output_task_id: "a" },
      { model },
      { signal: controller.signal, drain_timeout_seconds: 0.05 },
    )
    await sleep(10)
    controller.abort()
    return failed(running)
  }

  it("a model that never honours the abort is cut off by the drain timeout", async () => {
    const deaf: ModelClient = {
      request: () => sleep(400).then(() => ({ parts: [{ type: "text", text: "x" }] })),
    }
    const err = await cancelledWhileDraining(deaf)
    expect(err.result.drain_incomplete).toBe(true)
    expect(err.result.failure?.message).toContain("drain incomplete")
    expect(err.result.tasks[0]?.status).toBe("cancelled")
    await sleep(450)
  })

  it("a request the drain gave up on counts in usage.requests as in model_requests_total", async () => {
    const deaf: ModelClient = { request: () => new Promise(() => {}) }
    const err = await cancelledWhileDraining(deaf)
    expect(err.result).toMatchObject({
      drain_incomplete: true,
      model_requests_total: 1,
      model_requests_coverage: "complete",
    })
    expect(err.result.usage.requests).toBe(1)
    expect(err.result.tasks[0]?.usage.requests).toBe(1)
  })

  it("a task stopped after its request permit was granted never sends", async () => {
    const p = { tasks: [task("a"), task("b"), task("c", ["a", "b"])], output_task_id: "c" }
    const seen: string[] = []
    const model = (fail: boolean): ModelClient => ({
      request(req, signal) {
        seen.push(`${req.context.task_id}:${signal.aborted}`)
        if (fail) throw new Error("boom") // synchronously: fail-fast aborts b before its continuation runs
        return Promise.resolve({ parts: [{ type: "text", text: "x" }] })
      },
    })
    const failFast = await failed(runPlan(p, { model: model(true) }))
    expect(seen).toEqual(["a:false"])
    expect(failFast.result.usage.requests).toBe(1)
    expect(failFast.result.model_requests_total).toBe(1)
    seen.length = 0
    // The host aborts from its sink when b starts: a's permit is already granted.
    const controller = new AbortController()
    const onEvent = (e: { type: string; task_id?: string }) => {
      if (e.type === "task_started" && e.task_id === "b") controller.abort()
    }
    const cancelled = await failed(
      runPlan(p, { model: model(false) }, { signal: controller.signal, onEvent }),
    )
    expect(seen).toEqual([])
    expect(cancelled.result).toMatchObject({
      reason: "cancelled",
      model_requests_total: 0,
      model_requests: [],
    })
    expect(cancelled.result.usage.requests).toBe(0)
  })
})

describe("timers", () => {
  it("a stopping run waits 30 s by default for a task that ignores its abort, then finishes without it", async () => {
    // Runs in all six runtimes, so no fake timers (the Deno and Bun glue has none): setTimeout is wrapped to record
    // each delay and to fire the one 30 s timer at once. With another default the run would wait that long for real.
    const real = globalThis.setTimeout
    const asked: number[] = []
    const fast = (fn: () => void, ms?: number) => {
      asked.push(ms ?? 0)
      return real(fn, ms === 30_000 ? 0 : ms)
    }
    globalThis.setTimeout = fast as typeof setTimeout
    try {
      const deaf: ModelClient = { request: () => new Promise(() => {}) }
      const controller = new AbortController()
      const running = failed(
        runPlan({ tasks: [task("a")], output_task_id: "a" }, { model: deaf }, { signal: controller.signal }),
      )
      await sleep(10)
      expect(asked).not.toContain(30_000)
      controller.abort()
      const err = await running
      expect(asked.filter((ms) => ms === 30_000)).toHaveLength(1)
      expect(err.result).toMatchObject({ reason: "cancelled", drain_incomplete: true })
    } finally {
      globalThis.setTimeout = real
    }
  })

  it("a deadline beyond setTimeout's 24.8-day cap does not fire at once, and no timer outlives the run", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "x", delay_ms: 20 }] })
    const r = await runPlan(plan, { model, budget: { deadline_seconds: 40 * 24 * 3600 } })
    expect(r.status).toBe("succeeded")
  })
  it("a bad drain timeout is refused up front", () => {
    let thrown: unknown
    try {
      runPlan(plan, { model: new ScriptedModel() }, { drain_timeout_seconds: 0 })
    } catch (e) {
      thrown = e
    }
    expect((thrown as { code?: string }).code).toBe("invalid_option")
  })
})
