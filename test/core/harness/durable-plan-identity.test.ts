// A durable run id reused with another plan: a task's row is keyed by run and task id only, so a task whose prompt or
// dependencies changed used to replay the old task's answer as its own (its run "succeeded" with the answer to
// another question). Its plan entry is now part of its row: a finished row of another entry fails the task, and the
// ledger refuses to claim an unfinished one with other arguments.
import { describe, expect, it } from "vitest"
import {
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  type RunResult,
  runPlan,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { failed, task } from "./helpers.ts"

const runId = `run:${"5a".repeat(16)}`
const ledgerOf = (storage: MemoryLedgerStorage) =>
  new ActionLedger({ storage, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })

/** Answers each request with the prompt it was asked; records what it was asked. */
function echo(): ModelClient & { asked: string[] } {
  const m = {
    asked: [] as string[],
    async request(req: ModelRequest) {
      const first = req.messages[0]
      const prompt = first?.role === "user" ? first.content : ""
      m.asked.push(`${req.context.task_id}:${prompt.split("\n")[0]}`)
      return { parts: [{ type: "text" as const, text: `answer to ${prompt.split("\n")[0]}` }] }
    },
  }
  return m
}

const planOf = (prompt: string, deps = ["z"]) => ({
  tasks: [task("z"), task("y"), task("a", deps, prompt), task("out", ["a", "y"])],
  output_task_id: "out",
})

describe("a durable run id reused with another plan", () => {
  it("a finished task whose prompt or dependencies changed is refused, not replayed", async () => {
    const storage = new MemoryLedgerStorage()
    const first = echo()
    const r1: RunResult = await runPlan(
      planOf("what is 2+2?"),
      { model: first, ledger: ledgerOf(storage) },
      {
        run_id: runId,
      },
    )
    expect(r1.tasks.find((t) => t.task_id === "a")?.output).toBe("answer to what is 2+2?")
    expect(first.asked).toHaveLength(4)

    // The same plan replays everything: nothing is asked again.
    const same = echo()
    const r2 = await runPlan(
      planOf("what is 2+2?"),
      { model: same, ledger: ledgerOf(storage) },
      { run_id: runId },
    )
    expect(same.asked).toEqual([])
    expect(r2.tasks.map((t) => t.replayed)).toEqual([true, true, true, true])

    for (const changed of [planOf("drop the prod table?"), planOf("what is 2+2?", ["z", "y"])]) {
      const m = echo()
      const e = await failed(runPlan(changed, { model: m, ledger: ledgerOf(storage) }, { run_id: runId }))
      expect(m.asked).toEqual([])
      expect(e.result.output).toBeNull()
      expect(e.result.failure).toMatchObject({
        reason: "task_failed",
        task_id: "a",
        error_type: "HarnessError",
      })
      expect(e.result.failure?.message).toContain("another plan under this run_id")
      expect(e.result.tasks.find((t) => t.task_id === "a")?.status).toBe("failed")
      expect(e.result.tasks.find((t) => t.task_id === "out")?.status).toBe("not_started")
    }
  })

  it("an unfinished task whose prompt changed is refused by the ledger: none of its old requests replays into it", async () => {
    const storage = new MemoryLedgerStorage()
    const ac = new AbortController()
    let toolRuns = 0
    const work: HarnessTool = {
      name: "work",
      parameters: { type: "object" },
      execute: () => `done ${++toolRuns}`,
    }
    // The first run: a's first request (answered for the old prompt) asks for a tool, its second hangs and the run is
    // cancelled; a's row is claimed, never finished, its request r0 and tool call are.
    const hanging: ModelClient = {
      request: (req, signal) => {
        if (req.context.task_id !== "a") return Promise.resolve({ parts: [{ type: "text", text: "ok" }] })
        if (req.context.step === 0)
          return Promise.resolve({ parts: [{ type: "tool_call", id: "c", name: "work", args: {} }] })
        setTimeout(() => ac.abort(), 5)
        return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))
      },
    }
    await failed(
      runPlan(
        planOf("what is 2+2?"),
        { model: hanging, ledger: ledgerOf(storage), tools: [work] },
        {
          run_id: runId,
          signal: ac.signal,
        },
      ),
    )
    expect(toolRuns).toBe(1)
    expect((await storage.get(`${runId}/a/r0`))?.terminalOutcome).toBe("COMPLETED")
    expect((await storage.get(`${runId}/a`))?.terminalOutcome).not.toBe("COMPLETED")

    // Before, a replayed r0 and its tool result (made for the old prompt) and asked its next request on top of them.
    const m = echo()
    const e = await failed(
      runPlan(
        planOf("drop the prod table?"),
        { model: m, ledger: ledgerOf(storage), tools: [work] },
        {
          run_id: runId,
        },
      ),
    )
    expect(m.asked.filter((a) => a.startsWith("a:"))).toEqual([])
    expect(e.result.tasks.find((t) => t.task_id === "a")?.usage.requests).toBe(0)
    expect(toolRuns).toBe(1)
    expect(e.result.failure).toMatchObject({
      reason: "task_failed",
      task_id: "a",
      error_type: "LedgerIdentityConflictError",
    })
    expect(e.result.output).toBeNull()
  })

  it("a resume charges nothing of another plan's rows: the task fails on the mismatch, not a budget stop", async () => {
    const storage = new MemoryLedgerStorage()
    await runPlan(planOf("what is 2+2?"), { model: echo(), ledger: ledgerOf(storage) }, { run_id: runId })
    // 4 finished rows of 1 request each; the new plan allows 3 and changes a's prompt. Charged before the first task,
    // a's row stopped the run on request_limit, a limit the new plan never reached.
    const m = echo()
    const e = await failed(
      runPlan(
        planOf("drop the prod table?"),
        { model: m, ledger: ledgerOf(storage), budget: { request_limit: 3 } },
        { run_id: runId },
      ),
    )
    expect(m.asked).toEqual([])
    expect(e.result.failure).toMatchObject({
      reason: "task_failed",
      task_id: "a",
      error_type: "HarnessError",
    })
  })

  it("a prompt the store cannot hold in a row (too big, or with U+0000) still runs durably, as before", async () => {
    // The row holds a digest of the plan entry: a 200 KB prompt (over this store's 100 KB rows) or a NUL in it was
    // refused at the claim, though no row held the prompt before and the run succeeded.
    let asked = 0
    // Answers with the prompt's length: the row holds the answer, which must fit.
    const counting: ModelClient = {
      request: async (req) => {
        asked++
        const first = req.messages[0]
        return {
          parts: [{ type: "text", text: `${first?.role === "user" ? first.content.length : -1} chars` }],
        }
      },
    }
    for (const prompt of ["x".repeat(200_000), "say\u0000hi"]) {
      const storage = new MemoryLedgerStorage({ limits: { maxRowBytes: 100_000, validUnicodeOnly: true } })
      const plan = { tasks: [task("a", [], prompt)], output_task_id: "a" }
      const run = (p: typeof plan) =>
        runPlan(p, { model: counting, ledger: ledgerOf(storage) }, { run_id: runId })
      asked = 0
      expect((await run(plan)).output).toBe(`${prompt.length} chars`)
      expect((await run(plan)).output).toBe(`${prompt.length} chars`)
      expect(asked).toBe(1)
      // Another prompt under the run id is still refused.
      const e = await failed(run({ tasks: [task("a", [], `${prompt}!`)], output_task_id: "a" }))
      expect(e.result.failure).toMatchObject({ task_id: "a", error_type: "HarnessError" })
      expect(asked).toBe(1)
    }
  })

  it("a finished row written before rows held the plan says so and what to do", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = ledgerOf(storage)
    // The row as the previous version wrote it: its arguments were the task id alone.
    const old = ledger.tool(
      {
        name: "harness.task",
        binding: { agentId: "mycelium-harness", policyVersion: "1", sideEffectClass: "read" },
      },
      async () => ({ output: "old answer", usage: { requests: 1 } }),
    )
    await old({ task_id: "a" }, { requestId: `${runId}/a` })
    const e = await failed(
      runPlan({ tasks: [task("a")], output_task_id: "a" }, { model: echo(), ledger }, { run_id: runId }),
    )
    expect(e.result.failure).toMatchObject({ task_id: "a", error_type: "HarnessError" })
    expect(e.result.failure?.message).toContain("finish it with the version that started it")
  })

  it("an unfinished row written before rows held the plan says to finish it with that version, not a new id", async () => {
    const storage = new MemoryLedgerStorage()
    // The previous version's task crashed mid-run: its row (the task id alone) is claimed, never finished.
    const old = ledgerOf(storage).tool(
      {
        name: "harness.task",
        binding: { agentId: "mycelium-harness", policyVersion: "1", sideEffectClass: "read" },
      },
      () => new Promise<never>(() => {}),
    )
    void old({ task_id: "a" }, { requestId: `${runId}/a` })
    await new Promise((r) => setTimeout(r, 10))
    expect((await storage.get(`${runId}/a`))?.terminalOutcome).toBe("IN_FLIGHT")
    const m = echo()
    const e = await failed(
      runPlan(
        { tasks: [task("a")], output_task_id: "a" },
        { model: m, ledger: ledgerOf(storage) },
        { run_id: runId },
      ),
    )
    expect(m.asked).toEqual([])
    expect(e.result.failure).toMatchObject({ task_id: "a", error_type: "HarnessError" })
    // The ledger's own refusal said to mint a new id: a fresh run_id runs again what the crashed run's tools did.
    expect(e.result.failure?.message).toContain("finish it with the version that started it")
  })
})
