// The AI SDK integration in a real `generateText` tool loop (ai's MockLanguageModelV3 plays the model).
import { generateText, type ModelMessage, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, LedgerHardBlockError, MemoryLedgerStorage } from "../../src/core/index.ts"
import {
  guardTool,
  guardTools,
  guardTranscript,
  type ToolLedger,
  transitionOf,
} from "../../src/integrations/ai-sdk.ts"
import {
  HistoryGuard,
  HistoryTruncatedError,
  MessageValidator,
  type RepairReport,
} from "../../src/transcript.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"

const payment = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate" as const,
}

function paymentTool(charges: Array<{ amount: number; recipient: string }>) {
  return tool({
    description: "Charge a customer",
    inputSchema: z.object({ amount: z.number().positive(), recipient: z.string().regex(/^acct_\w+$/) }),
    execute: async ({ amount, recipient }) => {
      charges.push({ amount, recipient })
      return { chargeId: `ch_${charges.length}`, amount }
    },
  })
}

const newLedger = (storage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} })

function toolOutputs(result: { steps: Array<{ content: Array<{ type: string }> }> }) {
  return result.steps.flatMap((s) =>
    s.content.filter((p) => p.type === "tool-result" || p.type === "tool-error"),
  ) as Array<{ type: string; toolCallId: string; output?: unknown; error?: unknown }>
}

describe("AI SDK integration", () => {
  it("a redispatched tool call (same toolCallId) runs once; the transcript guard repairs the reused id", async () => {
    const charges: Array<{ amount: number; recipient: string }> = []
    const ledger = newLedger()
    const send_payment = guardTool(ledger, paymentTool(charges), { name: "send_payment", binding: payment })
    const call = { id: "call_1", tool: "send_payment", input: { amount: 100, recipient: "acct_123" } }
    const reports: RepairReport[] = []
    const sent: ModelMessage[][] = []
    const guard = guardTranscript({ onRepair: (r) => reports.push(r) })

    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { send_payment },
      prompt: "pay acct_123 100",
      stopWhen: stepCountIs(5),
      prepareStep: (step) => {
        const out = guard(step)
        sent.push(out.messages)
        return out
      },
    })

    expect(result.text).toBe("done")
    expect(charges).toEqual([{ amount: 100, recipient: "acct_123" }])
    const outputs = toolOutputs(result)
    expect(outputs.map((o) => o.type)).toEqual(["tool-result", "tool-result"])
    expect(outputs[1]?.output).toEqual(outputs[0]?.output)
    expect(outputs[0]?.output).toEqual({ chargeId: "ch_1", amount: 100 })

    const rows = await ledger.listTransitions()
    expect(rows).toHaveLength(1)
    expect(rows[0]?.terminalOutcome).toBe("COMPLETED")
    expect(rows[0]?.kwargs.tool_call_id).toBe("call_1")

    // The third step's transcript had call_1 twice; what the model was sent is valid for the AI SDK format.
    expect(reports.length).toBeGreaterThan(0)
    const validator = new MessageValidator({ format: "ai-sdk" })
    for (const messages of sent) expect(validator.check(messages)).toEqual([])
  })

  it("a redispatch after a restart (a new process on the same store) replays instead of running", async () => {
    const charges: Array<{ amount: number; recipient: string }> = []
    const storage = new MemoryLedgerStorage()
    const call = { id: "call_restart", tool: "send_payment", input: { amount: 5, recipient: "acct_9" } }
    for (let run = 0; run < 3; run++) {
      const tools = guardTools(
        newLedger(storage),
        { send_payment: paymentTool(charges) },
        {
          send_payment: { binding: payment },
        },
      )
      const result = await generateText({ model: scriptedModel([[call]]), tools, prompt: "pay" })
      expect(toolOutputs(result)[0]?.output).toEqual({ chargeId: "ch_1", amount: 5 })
    }
    expect(charges).toHaveLength(1)
  })

  it("two copies of one call in the same step race: one runs, the other waits and gets its result", async () => {
    let executions = 0
    const ledger = newLedger()
    const slow = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ to: z.string() }),
        execute: async ({ to }) => {
          executions++
          await new Promise((r) => setTimeout(r, 40))
          return `sent to ${to}`
        },
      }),
      { name: "send_email", binding: { ...payment, sideEffectClass: "non_idempotent_mutate" } },
    )
    const call = { id: "call_dup", tool: "send_email", input: { to: "a@example.com" } }
    const result = await generateText({
      model: scriptedModel([[call, call, call]]),
      tools: { send_email: slow },
      prompt: "mail",
    })
    expect(executions).toBe(1)
    expect(toolOutputs(result).map((o) => o.output)).toEqual([
      "sent to a@example.com",
      "sent to a@example.com",
      "sent to a@example.com",
    ])
  })

  it("a crash inside the side effect hard-blocks the redispatch; after a release it runs exactly once more", async () => {
    let executions = 0
    let crash = true
    const ledger = newLedger()
    const charge = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ amount: z.number() }),
        execute: async ({ amount }, options) => {
          return transitionOf(options).sideEffect(async () => {
            executions++
            if (crash) throw new Error("gateway connection reset")
            return { charged: amount }
          })
        },
      }),
      { name: "charge", binding: payment, boundary: "manual" },
    )
    const call = { id: "call_crash", tool: "charge", input: { amount: 7 } }
    const run = () => generateText({ model: scriptedModel([[call]]), tools: { charge }, prompt: "charge" })

    const first = toolOutputs(await run())
    expect(first[0]?.type).toBe("tool-error")
    expect(String(first[0]?.error)).toContain("gateway connection reset")
    const row = (await ledger.listTransitions())[0]
    expect(row?.terminalOutcome).toBe("UNKNOWN")

    crash = false
    const second = toolOutputs(await run())
    expect(second[0]?.type).toBe("tool-error")
    expect(second[0]?.error).toBeInstanceOf(LedgerHardBlockError)
    expect(executions).toBe(1)

    await ledger.release(row!.requestId, {
      verified: "not_executed",
      by: "ops",
      reason: "the gateway shows no charge",
    })
    const third = toolOutputs(await run())
    expect(third[0]).toMatchObject({ type: "tool-result", output: { charged: 7 } })
    const fourth = toolOutputs(await run())
    expect(fourth[0]).toMatchObject({ type: "tool-result", output: { charged: 7 } })
    expect(executions).toBe(2)
  })

  it("bounded() refuses out-of-scope arguments before the claim: nothing is written, nothing runs", async () => {
    const charges: Array<{ amount: number; recipient: string }> = []
    const ledger = newLedger()
    const send_payment = guardTool(ledger, paymentTool(charges), {
      name: "send_payment",
      binding: payment,
      bounds: { entityParam: "recipient", entityPattern: "acct_(1|2)\\d*" },
    })
    const call = { id: "call_scope", tool: "send_payment", input: { amount: 1, recipient: "acct_999" } }
    const result = await generateText({
      model: scriptedModel([[call]]),
      tools: { send_payment },
      prompt: "x",
    })
    const out = toolOutputs(result)[0]
    expect(out?.type).toBe("tool-error")
    expect((out?.error as { violation?: string } | undefined)?.violation).toBe("scope_entity_pattern")
    expect(charges).toEqual([])
    expect(await ledger.listTransitions()).toEqual([])
  })

  it("guardTranscript() trims with a HistoryGuard before each step, keeping calls with their results", async () => {
    const charges: Array<{ amount: number; recipient: string }> = []
    const send_payment = guardTool(newLedger(), paymentTool(charges), {
      name: "send_payment",
      binding: payment,
    })
    const calls = [1, 2, 3].map((n) => [
      { id: `call_t${n}`, tool: "send_payment", input: { amount: n, recipient: "acct_1" } },
    ])
    const guard = guardTranscript({ history: new HistoryGuard({ maxMessages: 4 }), trim: true })
    const sent: ModelMessage[][] = []
    await generateText({
      model: scriptedModel(calls),
      tools: { send_payment },
      prompt: "pay three times",
      stopWhen: stepCountIs(6),
      prepareStep: (step) => {
        const out = guard(step)
        sent.push(out.messages)
        return out
      },
    })
    expect(charges.map((c) => c.amount)).toEqual([1, 2, 3])
    expect(sent.map((m) => m.length)).toEqual([1, 3, 4, 4])
    const validator = new MessageValidator({ format: "ai-sdk" })
    for (const messages of sent) expect(validator.check(messages)).toEqual([])
    // Without trim, the same limit stops the run before the model sees the oversized history.
    await expect(
      generateText({
        model: scriptedModel(calls),
        tools: { send_payment },
        prompt: "pay three times",
        stopWhen: stepCountIs(6),
        prepareStep: guardTranscript({ history: new HistoryGuard({ maxMessages: 4 }) }),
      }),
    ).rejects.toThrowError(HistoryTruncatedError)
  })

  it("a tool without a binding is still deduplicated by its toolCallId", async () => {
    const charges: Array<{ amount: number; recipient: string }> = []
    const ledger = newLedger()
    const send_payment = guardTool(ledger, paymentTool(charges), { name: "send_payment" })
    const call = { id: "call_unbound", tool: "send_payment", input: { amount: 4, recipient: "acct_4" } }
    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { send_payment },
      prompt: "pay",
      stopWhen: stepCountIs(4),
    })
    expect(toolOutputs(result).map((o) => o.output)).toEqual([
      { chargeId: "ch_1", amount: 4 },
      { chargeId: "ch_1", amount: 4 },
    ])
    expect(charges).toHaveLength(1)
    expect((await ledger.listTransitions())[0]?.requestId).toBe("call_unbound")
  })

  it("a streaming execute is drained once: the ledger records its last value and a redispatch replays it", async () => {
    let runs = 0
    const ledger = newLedger()
    const progress = guardTool(
      ledger,
      tool({
        description: "Reports progress, then the total",
        inputSchema: z.object({ n: z.number() }),
        execute: async function* ({ n }) {
          runs++
          yield { done: 0 }
          yield { done: n }
        },
      }),
      { name: "progress" },
    )
    const call = { id: "call_stream", tool: "progress", input: { n: 3 } }
    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { progress },
      prompt: "count",
      stopWhen: stepCountIs(4),
    })
    expect(toolOutputs(result).map((o) => o.output)).toEqual([{ done: 3 }, { done: 3 }])
    expect(runs).toBe(1)
    expect((await ledger.listTransitions()).map((t) => t.requestId)).toEqual(["call_stream"])
  })

  it("transitionOf() outside a guarded call is a typed error, and a tool without execute is refused", () => {
    // The integrations take any ledger with tool(options, fn): ActionLedger here, RemoteLedger at the edge.
    const structural: ToolLedger = newLedger()
    expect(typeof structural.tool).toBe("function")
    expect(() => transitionOf({ toolCallId: "x", messages: [] })).toThrowError(
      expect.objectContaining({ code: "not_a_guarded_call" }),
    )
    expect(() =>
      guardTool(newLedger(), tool({ inputSchema: z.object({}), outputSchema: z.string() }), {
        name: "remote",
      }),
    ).toThrowError(expect.objectContaining({ code: "tool_has_no_execute" }))
  })
})
