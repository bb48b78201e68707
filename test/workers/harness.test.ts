// The harness inside workerd: a plan with slots, a shared budget, a cancellation and a durable rerun on the
// in-memory ledger, with Workers' own AbortSignal, timers and Web Crypto.
import { describe, expect, it } from "vitest"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { type RunEvent, RunFailed, runPlan, ScriptedModel } from "../../src/harness/index.ts"

const plan = {
  tasks: [
    { task_id: "a", prompt: "a" },
    { task_id: "b", prompt: "b" },
    { task_id: "c", prompt: "c", depends_on: ["a", "b"] },
  ],
  output_task_id: "c",
}

describe("harness in workerd", () => {
  it("runs a plan, emits ordered events and replays a durable rerun", async () => {
    const events: RunEvent[] = []
    const model = new ScriptedModel({ byTask: { c: [{ text: "joined", delay_ms: 5 }] } })
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const r = await runPlan(
      plan,
      { model, ledger },
      { onEvent: (e) => events.push(e), run_id: `run:${"c".repeat(32)}` },
    )
    expect(r.output).toBe("joined")
    expect(events[0]?.type).toBe("run_started")
    expect(events.at(-1)?.type).toBe("run_finished")
    const again = await runPlan(plan, { model, ledger }, { run_id: `run:${"c".repeat(32)}` })
    expect(again.output).toBe("joined")
    expect(model.requests).toHaveLength(3)
  })

  it("cancels and drains", async () => {
    const model = new ScriptedModel({ fallback: [{ text: "slow", delay_ms: 10_000 }] })
    const controller = new AbortController()
    const running = runPlan(plan, { model }, { signal: controller.signal })
    await new Promise((r) => setTimeout(r, 20))
    controller.abort()
    const err = await running.catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RunFailed)
    expect((err as RunFailed).result.reason).toBe("cancelled")
    expect(model.inFlight).toBe(0)
  })
})
