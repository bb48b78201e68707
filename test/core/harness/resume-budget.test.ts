// A resumed durable run charges what it will replay before its first task starts (durable.ts `precharge`): a finished
// task's stored usage, and each finished request of an unfinished task and of its sub-queries. Charged only when the
// rerun read each row, a task that sent new requests first spent budget the replay then added to.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type RunEvent,
  RunFailed,
  type RunResult,
  rlmQueryTool,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import type { LedgerStorage } from "../../../src/core/storage/contract.ts"
import { ManualClock } from "../../../src/testing.ts"
import { delayedStore, task } from "./helpers.ts"

const runId = `run:${"cd".repeat(16)}`
const ledgerOf = (store: LedgerStorage) =>
  new ActionLedger({ storage: store, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })
const call = (name: string, args: Record<string, unknown> = {}, id = name) => ({
  type: "tool_call" as const,
  id,
  name,
  args,
})
const text = (t: string) => ({ parts: [{ type: "text" as const, text: t }] })

/** A model answering each task with its id, counting the requests it is sent (a replay must send none). */
function countingModel() {
  const counted = { sent: 0, model: {} as ModelClient }
  counted.model = {
    request: async (req) => {
      counted.sent++
      return text(req.context.task_id)
    },
  }
  return counted
}

/** A run of task "a" under `runId` whose model failed: its rows exist, none COMPLETED, so a rerun is a resume. */
async function seedFailedRun(storage: MemoryLedgerStorage): Promise<void> {
  const failing: ModelClient = {
    request: async () => {
      throw new Error("model down")
    },
  }
  await runPlan(
    { tasks: [task("a")], output_task_id: "a" },
    { model: failing, ledger: ledgerOf(storage) },
    { run_id: runId },
  ).catch(() => {})
  expect(await storage.get(`${runId}/a`)).not.toBeNull()
}
const hang = (signal: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  )
const work: HarnessTool = { name: "work", parameters: { type: "object" }, execute: () => "ok" }
const settled = (p: Promise<RunResult>) => p.catch((e: RunFailed) => e.result)

/** Every call about a row under `<run>/<task>/` takes 20 ms longer: that task's replay is read late. */
const slowFor = (store: MemoryLedgerStorage, taskId: string): LedgerStorage =>
  delayedStore(store, (id) => (id.startsWith(`${runId}/${taskId}/`) ? 20 : 0))

/** The first run: cancelled once `b` has finished `finishedRequests` model requests (its next one hangs). */
async function crashAfter(
  storage: MemoryLedgerStorage,
  model: ModelClient,
  finishedRequests: number,
  budget: Parameters<typeof runPlan>[1]["budget"],
  tools: HarnessTool[] = [work],
): Promise<RunResult> {
  const ac = new AbortController()
  let seen = 0
  return settled(
    runPlan(
      { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
      { model, ledger: ledgerOf(storage), tools, budget },
      {
        run_id: runId,
        signal: ac.signal,
        onEvent: (e) => {
          if (e.type === "model_request_finished" && e.task_id === "b" && ++seen === finishedRequests)
            setTimeout(() => ac.abort(), 5)
        },
      },
    ),
  )
}

async function completed(storage: MemoryLedgerStorage): Promise<string[]> {
  const ids: string[] = []
  for await (const e of storage.list()) if (e.terminalOutcome === "COMPLETED") ids.push(e.requestId)
  return ids
}

describe("a resumed durable run charges its replay before its first task", () => {
  it("a half-finished task's finished requests: the fresh task that runs first cannot spend them again", async () => {
    const storage = new MemoryLedgerStorage()
    const budget = { request_limit: 5 }
    // a always asks for a tool until its 5th request; b does two tool rounds, then answers.
    const model = (first: boolean): ModelClient => ({
      async request(req, signal) {
        const { task_id, step } = req.context
        if (first && (task_id === "a" || step === 2)) return hang(signal)
        if (task_id === "out") return text("out")
        return step < (task_id === "a" ? 4 : 2) ? { parts: [call("work")] } : text(task_id)
      },
    })
    const first = await crashAfter(storage, model(true), 2, budget)
    // a's hanging request, b's two finished ones and its third, hanging.
    expect(first.usage.requests).toBe(4)
    expect((await completed(storage)).sort()).toEqual([
      `${runId}/b/r0`,
      `${runId}/b/r0/c0`,
      `${runId}/b/r1`,
      `${runId}/b/r1/c0`,
    ])

    const sent: string[] = []
    const counting: ModelClient = {
      request(req, signal) {
        sent.push(`${req.context.task_id}#${req.context.step}`)
        return model(false).request(req, signal)
      },
    }
    const second = await settled(
      runPlan(
        { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
        { model: counting, ledger: ledgerOf(slowFor(storage, "b")), tools: [work], budget },
        { run_id: runId },
      ),
    )
    // b's two replayed requests were charged first: a may send 3, and its 4th is refused. (Charged late, a sent 5 and
    // the replay took the run to 7.)
    expect(sent.filter((s) => s.startsWith("a#"))).toEqual(["a#0", "a#1", "a#2"])
    expect(second.failure).toMatchObject({ reason: "request_limit", task_id: "a" })
    expect(second.usage.requests).toBeLessThanOrEqual(5)
    expect(second.model_requests_total).toBe(sent.length)
    // Usage keeps its meaning: what this run sent plus what it replayed, each once.
    const b = second.tasks.find((t) => t.task_id === "b")
    expect(second.usage.requests).toBe(sent.length + (b?.usage.requests ?? 0))
  })

  it("a half-finished task's finished tool calls: the fresh task that runs first cannot make them again", async () => {
    const storage = new MemoryLedgerStorage()
    const model = (first: boolean): ModelClient => ({
      async request(req, signal) {
        const { task_id, step } = req.context
        if (first && (task_id === "a" || step === 2)) return hang(signal)
        if (task_id === "out") return text("out")
        return step < (task_id === "a" ? 4 : 2) ? { parts: [call("work")] } : text(task_id)
      },
    })
    await crashAfter(storage, model(true), 2, {})
    expect((await completed(storage)).filter((id) => /\/c\d+$/.test(id)).sort()).toEqual([
      `${runId}/b/r0/c0`,
      `${runId}/b/r1/c0`,
    ])
    const ran: string[] = []
    const counted: HarnessTool = {
      ...work,
      execute: (_a, ctx) => {
        ran.push(ctx.task_id)
        return "ok"
      },
    }
    const second = await settled(
      runPlan(
        { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
        {
          model: model(false),
          ledger: ledgerOf(slowFor(storage, "b")),
          tools: [counted],
          budget: { tool_calls_limit: 3 },
        },
        { run_id: runId },
      ),
    )
    // b's two finished calls were charged first: a may make one, and its second batch is refused. (Charged as b's
    // replay read them, a made three and the run ended at five.)
    expect(ran).toEqual(["a"])
    expect(second.failure).toMatchObject({ reason: "tool_calls_limit", task_id: "a" })
    expect(second.usage.tool_calls).toBeLessThanOrEqual(3)
  })

  it("a sub-query's finished requests are charged too, once", async () => {
    const storage = new MemoryLedgerStorage()
    const budget = { request_limit: 6 }
    const model = (first: boolean): ModelClient => ({
      async request(req, signal) {
        const { task_id, step, depth } = req.context
        if (first && task_id === "a") return hang(signal)
        if (task_id === "out") return text("out")
        if (task_id === "a") return step < 4 ? { parts: [call("work")] } : text("a")
        // b asks one sub-query, which does a tool round and then (on the first run) hangs.
        if (depth === 0) return step === 0 ? { parts: [call("rlm_query", { prompt: "sub" })] } : text("b")
        if (first && step === 1) return hang(signal)
        return step === 0 ? { parts: [call("work")] } : text("sub answer")
      },
    })
    const tools = [work, rlmQueryTool()]
    const first = await crashAfter(storage, model(true), 2, budget, tools)
    expect(first.usage.requests).toBe(4)
    expect((await completed(storage)).sort()).toEqual([
      `${runId}/b/r0`,
      `${runId}/b/r0/c0/q0/r0`,
      `${runId}/b/r0/c0/q0/r0/c0`,
    ])

    const sent: string[] = []
    const events: RunEvent[] = []
    const second = await settled(
      runPlan(
        { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
        {
          model: {
            request(req, signal) {
              sent.push(`${req.context.task_id}@${req.context.depth}#${req.context.step}`)
              return model(false).request(req, signal)
            },
          },
          ledger: ledgerOf(slowFor(storage, "b")),
          tools,
          budget,
        },
        { run_id: runId, onEvent: (e) => events.push(e) },
      ),
    )
    // 2 replayed requests (b's and its sub-query's) pre-charged: 4 new ones fit, a's 5th is refused.
    expect(sent.filter((s) => s.startsWith("a@"))).toEqual(["a@0#0", "a@0#1", "a@0#2", "a@0#3"])
    expect(second.failure).toMatchObject({ reason: "request_limit", task_id: "a" })
    expect(second.usage.requests).toBeLessThanOrEqual(6)
    // Replays are charged to the task's usage when read, never twice: the run ends at what it sent plus replayed.
    const b = second.tasks.find((t) => t.task_id === "b")
    const bSent = sent.filter((s) => s.startsWith("b@")).length
    expect(second.usage.requests).toBe(sent.length + (b?.usage.requests ?? 0) - bSent)
  })

  it("the same resume whose replay is read in time ends as it did: the sub-query's replay completes b", async () => {
    const storage = new MemoryLedgerStorage()
    const budget = { request_limit: 6 }
    const model = (first: boolean): ModelClient => ({
      async request(req, signal) {
        const { task_id, step, depth } = req.context
        if (first && task_id === "a") return hang(signal)
        if (task_id !== "b") return text(task_id)
        if (depth === 0) return step === 0 ? { parts: [call("rlm_query", { prompt: "sub" })] } : text("b")
        if (first && step === 1) return hang(signal)
        return step === 0 ? { parts: [call("work")] } : text("sub answer")
      },
    })
    const tools = [work, rlmQueryTool()]
    await crashAfter(storage, model(true), 2, budget, tools)
    const sent: string[] = []
    const second = await runPlan(
      { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" },
      {
        model: {
          request(req, signal) {
            sent.push(`${req.context.task_id}@${req.context.depth}#${req.context.step}`)
            return model(false).request(req, signal)
          },
        },
        ledger: ledgerOf(storage),
        tools,
        budget,
      },
      { run_id: runId },
    )
    // New: a, the sub-query's 2nd request, b's 2nd, out. Replayed: b's 1st and the sub-query's 1st.
    expect(sent.sort()).toEqual(["a@0#0", "b@0#1", "b@1#1", "out@0#0"])
    expect(second.usage.requests).toBe(6)
    expect(second.model_requests_total).toBe(4)
    expect(second.tasks.find((t) => t.task_id === "b")?.usage.requests).toBe(4)
  })

  it("a run that finished exactly at its limit replays to success", async () => {
    const storage = new MemoryLedgerStorage()
    const plan = { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" }
    const model: ModelClient = { request: async (req) => text(req.context.task_id) }
    const budget = { request_limit: 3 }
    const first = await runPlan(plan, { model, ledger: ledgerOf(storage), budget }, { run_id: runId })
    expect(first.usage.requests).toBe(3)
    const counting = countingModel()
    const again = await runPlan(
      plan,
      {
        model: counting.model,
        ledger: ledgerOf(storage),
        budget,
      },
      { run_id: runId },
    )
    expect(counting.sent).toBe(0)
    expect(again.output).toBe("out")
    expect(again.usage.requests).toBe(3)
    expect(again.tasks.every((t) => t.replayed)).toBe(true)
  })

  it("replayed usage already over a limit stops the run before its first task, as a limit met at start", async () => {
    const storage = new MemoryLedgerStorage()
    const plan = { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" }
    const model: ModelClient = {
      request: async (req) => ({
        ...text(req.context.task_id),
        usage: { input_tokens: 40, output_tokens: 10 },
      }),
    }
    await runPlan(plan, { model, ledger: ledgerOf(storage) }, { run_id: runId })
    // The resume is given a lower limit than the 150 tokens it replays (and a lower request limit than its 3).
    for (const [budget, reason] of [
      [{ total_tokens_limit: 100 }, "total_tokens_limit"],
      [{ request_limit: 2 }, "request_limit"],
    ] as const) {
      const events: RunEvent[] = []
      const counting = countingModel()
      const r = await settled(
        runPlan(
          plan,
          {
            model: counting.model,
            ledger: ledgerOf(storage),
            budget,
          },
          { run_id: runId, onEvent: (e) => events.push(e) },
        ),
      )
      expect(r.status).toBe("stopped")
      expect(r.failure).toMatchObject({ reason, task_id: null, error_type: "BudgetExceededError" })
      expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
      expect(counting.sent).toBe(0)
      // Nothing was replayed, so nothing is in the run's usage.
      expect(r.usage.requests).toBe(0)
    }
  })

  it("a resume lists once, under its own run id only; a fresh run and a run id of the harness's own list nothing", async () => {
    const storage = new MemoryLedgerStorage()
    const listed: unknown[] = []
    const counting = new Proxy(storage, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target)
        if (typeof v !== "function") return v
        if (prop !== "list") return v.bind(target)
        return (o: unknown) => {
          listed.push(o)
          return v.call(target, o)
        }
      },
    })
    const plan = { tasks: [task("a"), task("out", ["a"])], output_task_id: "out" }
    const model: ModelClient = { request: async (req) => text(req.context.task_id) }
    const events: RunEvent[] = []
    const mine = await runPlan(
      plan,
      { model, ledger: ledgerOf(counting) },
      { onEvent: (e) => events.push(e) },
    )
    expect(listed).toEqual([])
    const given = await runPlan(plan, { model, ledger: ledgerOf(counting) }, { run_id: runId })
    // A fresh run's tasks have no rows yet: it reads them and lists nothing (on Redis, a SCAN of the keyspace).
    expect(listed).toEqual([])
    const again = await runPlan(plan, { model, ledger: ledgerOf(counting) }, { run_id: runId })
    expect(listed).toEqual([{ prefix: `${runId}/` }])
    expect(again.tasks.every((t) => t.replayed)).toBe(true)
    // The same run either way: two requests, nothing replayed.
    for (const r of [mine, given]) {
      expect(r.output).toBe("out")
      expect(r.usage.requests).toBe(2)
      expect(r.model_requests_total).toBe(2)
      expect(r.tasks.some((t) => t.replayed)).toBe(false)
    }
    expect(events.map((e) => e.type)).toEqual([
      "run_started",
      "task_started",
      "model_request_finished",
      "task_succeeded",
      "task_started",
      "model_request_finished",
      "task_succeeded",
      "run_finished",
    ])
  })

  it("a cancel or the deadline while the store lists ends the run there: no task starts once the listing ends", async () => {
    const storage = new MemoryLedgerStorage()
    const slowList = new Proxy(storage, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target)
        if (typeof v !== "function") return v
        if (prop !== "list") return v.bind(target)
        return async function* (o: unknown) {
          await new Promise((r) => setTimeout(r, 40))
          yield* (v as (o: unknown) => AsyncIterable<unknown>).call(target, o)
        }
      },
    })
    await seedFailedRun(storage)
    for (const how of ["cancelled", "deadline"] as const) {
      const ac = new AbortController()
      if (how === "cancelled") setTimeout(() => ac.abort(), 5)
      const events: RunEvent[] = []
      const counting = countingModel()
      const r = await settled(
        runPlan(
          { tasks: [task("a")], output_task_id: "a" },
          {
            model: counting.model,
            ledger: ledgerOf(slowList),
            ...(how === "deadline" ? { budget: { deadline_seconds: 0.01 } } : {}),
          },
          { run_id: runId, signal: ac.signal, onEvent: (e) => events.push(e) },
        ),
      )
      expect(r.reason).toBe(how)
      expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
      // The listing's end finds the run over.
      await new Promise((r) => setTimeout(r, 60))
      expect(counting.sent).toBe(0)
      expect(events).toHaveLength(2)
    }
  })

  it("a store outage while listing fails the run closed, typed, before any task", async () => {
    const storage = new MemoryLedgerStorage()
    await seedFailedRun(storage)
    const down = new Proxy(storage, {
      get(target, prop) {
        if (prop === "list")
          return async function* () {
            yield* []
            throw new Error("connection reset")
          }
        const v: unknown = Reflect.get(target, prop, target)
        return typeof v === "function" ? v.bind(target) : v
      },
    })
    const events: RunEvent[] = []
    const counting = countingModel()
    const err = await runPlan(
      { tasks: [task("a")], output_task_id: "a" },
      {
        model: counting.model,
        ledger: ledgerOf(down),
      },
      { run_id: runId, onEvent: (e) => events.push(e) },
    ).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RunFailed)
    const r = (err as RunFailed).result
    expect(r.status).toBe("failed")
    expect(r.failure).toMatchObject({
      reason: "task_failed",
      task_id: null,
      error_type: "LedgerStorageUnavailableError",
    })
    expect(r.failure?.message).toMatch(/unavailable during list: Error: connection reset/)
    expect(events.map((e) => e.type)).toEqual(["run_started", "run_finished"])
    expect(counting.sent).toBe(0)
    expect(await completed(storage)).toEqual([])
  })
})
