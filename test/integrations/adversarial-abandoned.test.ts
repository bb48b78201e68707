// Adversarial review of holding the retry of a call its framework gave up on (abandoned-calls.test.ts has the
// cases it was built for). A slow ledger store widens the two windows where a retry slipped past the hold: the
// abort coming during the first call's claim, and the retry's own abort coming while it read the first call's row.
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, type LedgerEntry, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { ScriptedModel } from "./scripted/openai-agents.ts"
import {
  agentsPay,
  aiSdkPayer,
  args,
  binding,
  PausingModel,
  payTurns,
  runPayer,
  sleep,
  slowGateway,
} from "./scripted/payments.ts"

/** A store whose next claim, or next read, is slow once armed (a remote store under load). */
class SlowStore extends MemoryLedgerStorage {
  slowClaim = 0
  slowGet = 0
  override async tryClaimInflight(...a: Parameters<MemoryLedgerStorage["tryClaimInflight"]>) {
    const ms = this.slowClaim
    this.slowClaim = 0
    await sleep(ms)
    return super.tryClaimInflight(...a)
  }
  override async get(requestId: string): Promise<LedgerEntry | null> {
    const ms = this.slowGet
    this.slowGet = 0
    await sleep(ms)
    return super.get(requestId)
  }
}

describe("OpenAI Agents `timeoutMs`: windows where a retry slipped past the hold", () => {
  it("timed out during its claim, the first call never starts its body; the retry made meanwhile pays once", async () => {
    const storage = new SlowStore()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const { charges, charge } = slowGateway(50)
    // The first claim takes 500 ms, the SDK gives up at 200: the retry claims and pays at once (done by ~250 ms,
    // its own timeout at ~400), while the first call's claim lands at 500.
    storage.slowClaim = 500
    const outputs = await runPayer(new ScriptedModel(payTurns(2)), agentsPay(ledger, charge, 200))
    await sleep(500)
    expect(charges).toEqual(["acct_1:500"])
    expect(outputs).toHaveLength(2)
    expect(outputs[0]).toContain("timed out after 200ms")
    expect(outputs[1]).toContain("paid 500 to acct_1")
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.terminalOutcome).sort()).toEqual(["COMPLETED", "FAILED_BEFORE_EFFECT"])
  })

  it("a retry timed out while it read the first call's completed row settles nothing: the next retry answers", async () => {
    const storage = new SlowStore()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const { charges, charge } = slowGateway(300)
    // fc_1 times out at 200 and pays at 300. fc_2 (from ~200) reads fc_1's row for 400 ms (the read lands at ~600,
    // COMPLETED), but the SDK gave up on fc_2 at ~400. The model answers its third turn 400 ms later (~800).
    const model = new PausingModel(payTurns(3), { 2: 400 }, (t) => {
      if (t === 1) storage.slowGet = 400
    })
    const outputs = await runPayer(model, agentsPay(ledger, charge, 200))
    await sleep(400)
    expect(charges).toEqual(["acct_1:500"])
    expect(outputs).toHaveLength(3)
    expect(outputs.slice(0, 2).map((o) => o.includes("timed out after 200ms"))).toEqual([true, true])
    expect(outputs[2]).toContain("paid 500 to acct_1")
    expect(await ledger.listTransitions()).toHaveLength(1)
  })
})

describe("AI SDK: a run aborted during the claim, retried on the same thread meanwhile", () => {
  it("the aborted call never starts its body; the retry pays once", async () => {
    const storage = new SlowStore()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const { charges, charge } = slowGateway(50)
    const attempt = aiSdkPayer(ledger, charge)
    // The first claim takes 500 ms; the run is aborted at 100 and retried at 250, while that claim still waits.
    storage.slowClaim = 500
    const aborted = attempt("call_a", AbortSignal.timeout(100)).then(
      () => "finished",
      (e: unknown) => (e as Error).name,
    )
    await sleep(250)
    const retry = await attempt("call_b")
    expect(await aborted).not.toBe("finished")
    await sleep(400)
    expect(charges).toEqual(["acct_1:500"])
    const results = retry.steps.flatMap((s) => s.content.filter((p) => p.type === "tool-result"))
    expect(results.map((r) => (r as { output: unknown }).output)).toEqual(["paid 500 to acct_1"])
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.terminalOutcome).sort()).toEqual(["COMPLETED", "FAILED_BEFORE_EFFECT"])
  })
})

// Two identical calls made side by side (one step, or two runs on one thread) are two intents. When one fails with
// its effect unknown, or is given up on while it runs, and the other then succeeds, the model was still told the
// first failed: its retry is that first call's intent, not a new one.
describe("AI SDK: a twin's success does not end the hold on the call that failed beside it", () => {
  /** A guarded `pay` on thread t-1: call `id` charges after `ms[id]`, and fails after charging when `failAfter[id]`. */
  const payOn = (ms: Record<string, number>, failAfter: Record<string, true> = {}) => {
    const charges: string[] = []
    const pay = guardTool(
      new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} }),
      tool({
        description: "pay",
        inputSchema: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }, { toolCallId }) => {
          await sleep(ms[toolCallId] ?? 0)
          charges.push(toolCallId)
          if (failAfter[toolCallId]) throw new Error("gateway connection reset after the charge")
          return `paid ${cents} to ${to} (${toolCallId})`
        },
      }),
      { name: "pay", binding, meta: () => ({ threadId: "t-1" }) },
    )
    const attempt = (steps: { id: string }[][], abortSignal?: AbortSignal) =>
      generateText({
        model: scriptedModel(steps.map((calls) => calls.map(({ id }) => ({ id, tool: "pay", input: args })))),
        tools: { pay },
        prompt: "pay",
        stopWhen: stepCountIs(5),
        ...(abortSignal ? { abortSignal } : {}),
      })
    return { charges, attempt }
  }
  type Part = {
    readonly type: string
    readonly toolCallId?: string
    readonly output?: unknown
    readonly error?: unknown
  }
  /** Each tool call's result, or its error's code (else message), in order. */
  const outcomes = (r: { readonly steps: readonly { readonly content: readonly Part[] }[] }) =>
    r.steps.flatMap((s) =>
      s.content.flatMap((p) =>
        p.type === "tool-result"
          ? [`${p.toolCallId}: ${String(p.output)}`]
          : p.type === "tool-error"
            ? [`${p.toolCallId}: ${(p.error as { code?: string }).code ?? (p.error as Error).message}`]
            : [],
      ),
    )

  it("one step, two payments: the one that failed after charging stays held when its twin succeeds", async () => {
    // c1 fails at ~10 ms with its charge made, c2 succeeds at ~250 ms; the model then retries c1 as c3.
    const { charges, attempt } = payOn({ c1: 10, c2: 250 }, { c1: true })
    const r = await attempt([[{ id: "c1" }, { id: "c2" }], [{ id: "c3" }]])
    expect(outcomes(r)).toEqual([
      "c1: gateway connection reset after the charge",
      "c2: paid 500 to acct_1 (c2)",
      "c3: ledger_hard_block",
    ])
    expect(charges).toEqual(["c1", "c2"])
  })

  it("two runs on one thread, one aborted mid-payment: its retry waits for it after the other succeeds", async () => {
    // Run A's call charges at ~500 ms and its run is aborted at 100; run B's charges at ~250. Run C (the retry of
    // A's call) starts once B is done and waits for A's body: 150 ms and more of slack on either side.
    const { charges, attempt } = payOn({ call_a: 500, call_b: 250 })
    const a = attempt([[{ id: "call_a" }]], AbortSignal.timeout(100)).then(
      () => "finished",
      (e: unknown) => (e as Error).name,
    )
    const b = await attempt([[{ id: "call_b" }]])
    expect(await a).not.toBe("finished")
    expect(outcomes(b)).toEqual(["call_b: paid 500 to acct_1 (call_b)"])
    const c = await attempt([[{ id: "call_c" }]])
    expect(outcomes(c)).toEqual(["call_c: paid 500 to acct_1 (call_a)"])
    expect(charges).toEqual(["call_b", "call_a"])
  })
})
