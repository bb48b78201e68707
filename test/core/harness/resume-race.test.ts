// A resumed durable run lists its rows before its first task (durable.ts `precharge`); a task row another worker of
// the same run finishes between that listing and the task's own read must not be charged twice: once as the
// finished requests listed under the unfinished task, again as the finished task's stored usage, which holds them.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type RunFailed,
  type RunResult,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import type { LedgerStorage } from "../../../src/core/storage/contract.ts"
import { ManualClock } from "../../../src/testing.ts"
import { task } from "./helpers.ts"

const runId = `run:${"ef".repeat(16)}`
const ledgerOf = (store: LedgerStorage) =>
  new ActionLedger({ storage: store, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })
const work: HarnessTool = { name: "work", parameters: { type: "object" }, execute: () => "ok" }
const plan = { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" }
const settled = (p: Promise<RunResult>) => p.catch((e: RunFailed) => e.result)
const hang = (signal: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  )
const text = (t: string) => ({ parts: [{ type: "text" as const, text: t }] })
const tool = { parts: [{ type: "tool_call" as const, id: "w", name: "work", args: {} }] }

describe("a task row finished between the resume's listing and its read", () => {
  it("is charged once", async () => {
    const storage = new MemoryLedgerStorage()
    // The first run: b finishes two requests (each asks for a tool) and is cut off on its third; a hangs.
    const ac = new AbortController()
    let seen = 0
    await settled(
      runPlan(
        plan,
        {
          model: {
            request: (req, signal) =>
              req.context.task_id === "b" && req.context.step < 2 ? Promise.resolve(tool) : hang(signal),
          },
          ledger: ledgerOf(storage),
          tools: [work],
        },
        {
          run_id: runId,
          signal: ac.signal,
          onEvent: (e) => {
            if (e.type === "model_request_finished" && e.task_id === "b" && ++seen === 2)
              setTimeout(() => ac.abort(), 5)
          },
        },
      ),
    )
    const bKey = `${runId}/b`
    expect((await storage.get(`${bKey}/r1`))?.terminalOutcome).toBe("COMPLETED")
    expect((await storage.get(bKey))?.terminalOutcome).not.toBe("COMPLETED")

    // Right after the resume lists the run, b's row lands COMPLETED (the first run's worker was still finishing it):
    // its usage holds the two requests the listing saw under it.
    const racing = new Proxy(storage, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target)
        if (prop !== "list") return typeof v === "function" ? v.bind(target) : v
        return async function* (options: Parameters<LedgerStorage["list"]>[0]) {
          yield* target.list(options)
          const row = await target.get(bKey)
          const usage = { requests: 3, tool_calls: 2, input_tokens: 0, output_tokens: 0, details: {} }
          if (row) await target.set({ ...row, terminalOutcome: "COMPLETED", result: { output: "b", usage } })
        }
      },
    })
    const sent: string[] = []
    const model: ModelClient = {
      async request(req) {
        sent.push(`${req.context.task_id}#${req.context.step}`)
        return req.context.task_id === "a" && req.context.step < 2 ? tool : text(req.context.task_id)
      },
    }
    // b's 3 + a's 3 + out's 1: the limit of 7 is enough. Charged twice, b took 5 and a's third request was refused.
    const second = await settled(
      runPlan(
        plan,
        { model, ledger: ledgerOf(racing), tools: [work], budget: { request_limit: 7 } },
        { run_id: runId },
      ),
    )
    expect(second.failure).toBeNull()
    expect(sent).toEqual(["a#0", "a#1", "a#2", "out#0"])
    expect(second.usage.requests).toBe(7)
  })
})
