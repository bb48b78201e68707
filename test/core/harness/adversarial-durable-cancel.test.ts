// Cancellation of a durable run: what an abort leaves in the action ledger must let a rerun of the same run id
// finish without repeating a side effect, and without waiting for a lease to lapse.

import { describe, expect, it } from "vitest"
import {
  type DependencyPlan,
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type ModelResponse,
  RunFailed,
  runPlan,
  ScriptedModel,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { task } from "./helpers.ts"

const text = (t: string): ModelResponse => ({ parts: [{ type: "text", text: t }] })
const call = (name: string): ModelResponse => ({
  parts: [{ type: "tool_call", id: "c1", name, args: { amount: 5 } }],
})

const hang = (signal: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  )

/** Task "pay" calls the charge tool once and then answers; "slow" answers; "out" joins them. */
function scripted(opts: { hangSlow: boolean }): ModelClient & { sent: string[] } {
  const m = {
    sent: [] as string[],
    request: async (req: ModelRequest, signal: AbortSignal) => {
      const id = req.context.task_id
      m.sent.push(`${id}#${req.context.step}`)
      if (id === "pay") return req.context.step === 0 ? call("charge") : text("paid")
      if (id === "slow" && opts.hangSlow) return hang(signal)
      return text(id)
    },
  }
  return m
}

const plan = { tasks: [task("pay"), task("slow"), task("out", ["pay", "slow"])], output_task_id: "out" }

describe("a durable run that is cancelled, then rerun with the same run id", () => {
  it("cancelled while a model request hangs: the rerun finishes at once, replays the finished task, charges once", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const charges: number[] = []
    const charge: HarnessTool = {
      name: "charge",
      parameters: { type: "object" },
      binding: { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      execute: async (args) => {
        charges.push(args.amount as number)
        return "ch_1"
      },
    }
    const runId = `run:${"cd".repeat(16)}`
    const ac = new AbortController()
    const first = scripted({ hangSlow: true })
    const p = runPlan(plan, { model: first, ledger, tools: [charge] }, { run_id: runId, signal: ac.signal })
    while (!first.sent.includes("slow#0") || !first.sent.includes("pay#1"))
      await new Promise((r) => setTimeout(r, 1))
    await new Promise((r) => setTimeout(r, 5))
    ac.abort("operator stop")
    const err = await p.catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RunFailed)

    const second = scripted({ hangSlow: false })
    const result = await runPlan(plan, { model: second, ledger, tools: [charge] }, { run_id: runId })
    expect(result.output).toBe("out")
    expect(charges).toEqual([5])
    expect(second.sent).not.toContain("pay#0")
    expect(second.sent).toContain("slow#0")
  })

  it("cancelled while a non-idempotent tool runs (it honours the abort after charging): the rerun never charges again", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const charges: number[] = []
    let charged!: () => void
    const didCharge = new Promise<void>((r) => {
      charged = r
    })
    const charge: HarnessTool = {
      name: "charge",
      parameters: { type: "object" },
      binding: { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      execute: async (args, ctx) => {
        charges.push(args.amount as number) // the money moved...
        charged()
        return hang(ctx.signal) // ...and the confirmation never came back before the abort
      },
    }
    const runId = `run:${"ef".repeat(16)}`
    const ac = new AbortController()
    const p = runPlan(
      plan,
      { model: scripted({ hangSlow: true }), ledger, tools: [charge] },
      { run_id: runId, signal: ac.signal },
    )
    await didCharge
    ac.abort("operator stop")
    await expect(p).rejects.toBeInstanceOf(RunFailed)

    const rerun = await runPlan(
      plan,
      { model: scripted({ hangSlow: false }), ledger, tools: [charge] },
      { run_id: runId },
    ).catch((e: unknown) => e)
    expect(charges).toEqual([5])
    // Fails closed: the ledger's gate refuses the cut-off call instead of repeating it; an operator settles it.
    expect(rerun).toBeInstanceOf(RunFailed)
    expect((rerun as RunFailed).result.failure).toMatchObject({
      task_id: "pay",
      error_type: "LedgerHardBlockError",
    })
  })
})

describe("replayed usage counts toward the rerun's budget", () => {
  const ledger = () =>
    new ActionLedger({
      storage: new MemoryLedgerStorage(),
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
  /** Answers "a" at once with a tool call, then text; `hangAt` (task#step) waits for the abort. */
  const model = (hangAt: string | null): ModelClient & { sent: string[] } => {
    const m = {
      sent: [] as string[],
      request: async (req: ModelRequest, signal: AbortSignal) => {
        const at = `${req.context.task_id}#${req.context.step}`
        m.sent.push(at)
        if (at === hangAt) return hang(signal)
        return req.context.task_id === "a" && req.context.step === 0 ? call("look") : text(at)
      },
    }
    return m
  }
  const look: HarnessTool = { name: "look", parameters: { type: "object" }, execute: async () => "seen" }

  async function cancelAt(l: ActionLedger, runId: string, plan: DependencyPlan, at: string): Promise<void> {
    const ac = new AbortController()
    const first = model(at)
    const p = runPlan(plan, { model: first, ledger: l, tools: [look] }, { run_id: runId, signal: ac.signal })
    while (!first.sent.includes(at)) await new Promise((r) => setTimeout(r, 1))
    ac.abort("operator stop")
    await expect(p).rejects.toBeInstanceOf(RunFailed)
  }

  it("a replayed task's stored usage: request_limit 2 refuses z's request after a (2 requests) replays", async () => {
    const l = ledger()
    const runId = `run:${"7b".repeat(16)}`
    const plan = { tasks: [task("a"), task("z", ["a"])], output_task_id: "z" }
    await cancelAt(l, runId, plan, "z#0")
    const second = model(null)
    const err = await runPlan(
      plan,
      { model: second, ledger: l, tools: [look], budget: { request_limit: 2 } },
      { run_id: runId },
    ).catch((e: RunFailed) => e)
    expect(second.sent).toEqual([])
    expect((err as RunFailed).result).toMatchObject({ reason: "request_limit", usage: { requests: 2 } })
    expect((err as RunFailed).result.tasks[0]).toMatchObject({ task_id: "a", replayed: true })
  })

  it("a replayed request of an unfinished task: request_limit 1 refuses its next request", async () => {
    const l = ledger()
    const runId = `run:${"9a".repeat(16)}`
    const plan = { tasks: [task("a")], output_task_id: "a" }
    await cancelAt(l, runId, plan, "a#1")
    const second = model(null)
    const err = await runPlan(
      plan,
      { model: second, ledger: l, tools: [look], budget: { request_limit: 1 } },
      { run_id: runId },
    ).catch((e: RunFailed) => e)
    expect(second.sent).toEqual([])
    expect((err as RunFailed).result).toMatchObject({ reason: "request_limit", usage: { requests: 1 } })
  })
})

describe("durable keys built from task ids", () => {
  it("a task id that spells another task's request key ('a/r0') gets its own rows: every task runs once, outputs stay apart", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const sent: string[] = []
    const m: ModelClient = {
      request: async (req) => {
        sent.push(req.context.task_id)
        return text(`output of ${req.context.task_id}`)
      },
    }
    const collide = {
      tasks: [task("a"), task("a/r0", ["a"]), task("out", ["a/r0"])],
      output_task_id: "out",
    }
    const runId = `run:${"12".repeat(16)}`
    const result = await runPlan(collide, { model: m, ledger }, { run_id: runId })
    expect(sent.sort()).toEqual(["a", "a/r0", "out"])
    expect(result.tasks.map((t) => [t.task_id, t.status])).toEqual([
      ["a", "succeeded"],
      ["a/r0", "succeeded"],
      ["out", "succeeded"],
    ])
    // And a rerun replays all three without sending anything.
    sent.length = 0
    const again = await runPlan(collide, { model: m, ledger }, { run_id: runId })
    expect(sent).toEqual([])
    expect(again.output).toBe(result.output)
  })

  it("ids that differ only in how '/' is spelled ('a/r0' and 'a%2Fr0') are two tasks: each runs its own work", async () => {
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const sent: string[] = []
    const m: ModelClient = {
      request: async (req) => {
        sent.push(req.context.task_id)
        return text(`output of ${req.context.task_id}`)
      },
    }
    const plan = { tasks: [task("a/r0"), task("a%2Fr0", ["a/r0"])], output_task_id: "a%2Fr0" }
    const result = await runPlan(plan, { model: m, ledger }, { run_id: `run:${"56".repeat(16)}` })
    expect(sent).toEqual(["a/r0", "a%2Fr0"])
    expect(result.output).toBe("output of a%2Fr0")
  })

  it("the same tool at call index 0 in two requests of one task is two calls: both run", async () => {
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const charges: number[] = []
    const charge: HarnessTool = {
      name: "charge",
      parameters: { type: "object" },
      binding: { agentId: "pay", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" },
      execute: async (args) => {
        charges.push(args.amount as number)
        return `ch_${args.amount}`
      },
    }
    const m: ModelClient = {
      request: async (req) => {
        const s = req.context.step
        if (s > 1) return text("paid twice")
        return { parts: [{ type: "tool_call", id: `c${s}`, name: "charge", args: { amount: s ? 7 : 5 } }] }
      },
    }
    const plan = { tasks: [task("pay")], output_task_id: "pay" }
    const result = await runPlan(
      plan,
      { model: m, ledger, tools: [charge] },
      { run_id: `run:${"78".repeat(16)}` },
    )
    expect(charges).toEqual([5, 7])
    expect(result.output).toBe("paid twice")
  })
})

describe("a durable row at a task's key that is not a task's result", () => {
  it("fails that task with a typed error; the run settles instead of hanging on a non-string output", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = new ActionLedger({
      storage,
      clock: new ManualClock(),
      leaseTtl: 3600,
      onWarning: () => {},
    })
    const runId = `run:${"34".repeat(16)}`
    // Another writer used the key first.
    const foreign = ledger.tool(
      { name: "other", binding: { agentId: "x", policyVersion: "1", sideEffectClass: "read" } },
      async () => ({ not: "a task" }),
    )
    await foreign({}, { requestId: `${runId}/a` })
    const m: ModelClient = { request: async () => text("x") }
    const err = await within(
      runPlan({ tasks: [task("a")], output_task_id: "a" }, { model: m, ledger }, { run_id: runId }).catch(
        (e: unknown) => e,
      ),
      5_000,
    )
    expect(err).toBeInstanceOf(RunFailed)
    expect((err as RunFailed).result.failure).toMatchObject({ task_id: "a", error_type: "HarnessError" })
  })
})

async function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

describe("a durable run that failed, then rerun with the same run id", () => {
  it("the task whose model request failed sends it again; the finished task replays", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), leaseTtl: 30, onWarning: () => {} })
    const chain = { tasks: [task("a"), task("b", ["a"])], output_task_id: "b" }
    const runId = `run:${"ef".repeat(16)}`
    const first = new ScriptedModel({ byTask: { b: [{ error: "provider 500" }] } })
    expect(await runPlan(chain, { model: first, ledger }, { run_id: runId }).catch((e) => e)).toBeInstanceOf(
      RunFailed,
    )
    const second = new ScriptedModel()
    const result = await runPlan(chain, { model: second, ledger }, { run_id: runId })
    expect(result.output).toBe("done:b")
    expect(second.requests.map((r) => r.context.task_id)).toEqual(["b"])
  })
})
