// A model told that its payment failed calls again under a new call id: a new ledger key. In the AI SDK's real
// generateText loop and OpenAI Agents' real Runner (scripted models), a payment whose gateway timed out after
// charging must be charged once, however often the model retries. A call that completed but whose receipt could not
// be stored or signed is no failure: the model gets its result, never the receipt store's error.
import { tool as lcTool } from "@langchain/core/tools"
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage, type ReceiptHook } from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"
import { guardTool as guardLgTool } from "../../src/integrations/langgraph.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { scriptedGraph, toolMessages } from "./scripted/langgraph.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const newLedger = () => new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const args = { to: "acct_1", cents: 500 }

/** Charges, then times out the first `failures` times. */
function gateway(failures = 1) {
  const charges: string[] = []
  let left = failures
  const charge = async ({ to, cents }: { to: string; cents: number }) => {
    charges.push(`${to}:${cents}`)
    if (left-- > 0) throw new Error("gateway timed out")
    return `paid ${cents} to ${to}`
  }
  return { charges, charge }
}

describe("AI SDK: the model's retries of a payment that timed out after charging", () => {
  const payTool = (charge: ReturnType<typeof gateway>["charge"]) =>
    tool({
      description: "pay",
      inputSchema: z.object({ to: z.string(), cents: z.number() }),
      execute: charge,
    })
  const retries = [1, 2, 3].map((i) => [{ id: `call_${i}`, tool: "pay", input: args }])

  it("in one run (its experimental_context): charged once, the retries refused with a hard block", async () => {
    const { charges, charge } = gateway()
    const pay = guardTool(newLedger(), payTool(charge), { name: "pay", binding })
    const result = await generateText({
      model: scriptedModel(retries),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(5),
      experimental_context: { conversation: "c-1" },
    })
    expect(charges).toEqual(["acct_1:500"])
    const errors = result.steps.flatMap((s) => s.content.filter((p) => p.type === "tool-error"))
    expect(errors).toHaveLength(3)
    expect(errors.slice(1).map((e) => (e as { error: { code?: string } }).error.code)).toEqual([
      "ledger_hard_block",
      "ledger_hard_block",
    ])
  })

  it("with a thread id from meta, a later run in the same thread is held too; another thread is not", async () => {
    const { charges, charge } = gateway()
    const ledger = newLedger()
    const pay = guardTool(ledger, payTool(charge), {
      name: "pay",
      binding,
      meta: (o) => ({ threadId: (o.experimental_context as { thread: string }).thread }),
    })
    const run = (thread: string, id: string) =>
      generateText({
        model: scriptedModel([[{ id, tool: "pay", input: args }]]),
        tools: { pay },
        prompt: "pay",
        stopWhen: stepCountIs(3),
        experimental_context: { thread },
      })
    await run("t-1", "call_a")
    await run("t-1", "call_b")
    expect(charges).toEqual(["acct_1:500"])
    await run("t-2", "call_c")
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
  })

  it("without a conversation (no thread, no experimental_context) nothing is held: each retry is a new call", async () => {
    const { charges, charge } = gateway(3)
    const pay = guardTool(newLedger(), payTool(charge), { name: "pay", binding })
    await generateText({
      model: scriptedModel(retries),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(5),
    })
    expect(charges).toHaveLength(3)
  })
})

describe("OpenAI Agents: the model's retries of a payment that timed out after charging", () => {
  it("in one run (its RunContext): charged once; the model is told not to call again", async () => {
    const { charges, charge } = gateway()
    const pay = agentsTool(
      guardToolOptions(
        newLedger(),
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ to: z.string(), cents: z.number() }),
          execute: charge,
        },
        { binding },
      ),
    )
    const turns = [1, 2, 3].map((i) => [{ callId: `fc_${i}`, name: "pay", args }])
    const model = new ScriptedModel(turns)
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const result = await runner.run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay", {
      maxTurns: 6,
    })
    expect(charges).toEqual(["acct_1:500"])
    const outputs = result.newItems
      .filter((i) => i.type === "tool_call_output_item")
      .map((i) => JSON.stringify((i as { output: unknown }).output))
    expect(outputs).toHaveLength(3)
    expect(outputs[0]).toContain("gateway timed out")
    for (const o of outputs.slice(1)) expect(o).toContain("Do not call the tool again")
  })
})

describe("a call that completed, but whose receipt the receipt store or signer failed to keep", () => {
  const DSN = "postgres://audit:hunter2@10.0.0.5:5432/receipts"
  const down = () => Promise.reject(new Error(`connect ECONNREFUSED ${DSN}`))
  let n = 0
  const signs = (draft: object) => Promise.resolve({ ...draft, receipt_id: `r-${++n}` }) as never
  /** The receipt store refuses the append (ReceiptAppendError), or the signer is down (LedgerReceiptUnsignedError). */
  const hooks: Record<string, ReceiptHook> = {
    receipt_append_failed: { sign: signs, append: down },
    receipt_unsigned: { sign: down, append: async () => {} },
  }
  const receiptLedger = (receipts: ReceiptHook) =>
    new ActionLedger({ storage: new MemoryLedgerStorage(), receipts, onWarning: () => {} })
  const pay = z.object({ to: z.string(), cents: z.number() })
  const call = { id: "call_a", tool: "pay", input: args }

  it.each(Object.keys(hooks))(
    "AI SDK, %s: the model reads the result, the operator the warning; its redispatch is not charged",
    async (code) => {
      const { charges, charge } = gateway(0)
      const warnings: string[] = []
      const ledger = receiptLedger(hooks[code] as ReceiptHook)
      const guarded = guardTool(ledger, tool({ inputSchema: pay, execute: charge }), {
        name: "pay",
        binding,
        onWarning: (m) => warnings.push(m),
      })
      const prompts: string[] = []
      for (let i = 0; i < 2; i++) {
        const model = scriptedModel([[call]], prompts)
        const result = await generateText({
          model,
          tools: { pay: guarded },
          prompt: "pay",
          stopWhen: stepCountIs(3),
        })
        expect(result.steps[0]?.content.filter((p) => p.type === "tool-error")).toEqual([])
      }
      expect(charges).toEqual(["acct_1:500"])
      expect(prompts.join()).toContain('"value":"paid 500 to acct_1"')
      expect(prompts.join()).not.toContain("hunter2")
      expect(prompts.join()).not.toContain("receipt")
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^tool 'pay': Request '.*' is recorded .*hunter2/)
      expect((await ledger.listTransitions()).map((r) => r.terminalOutcome)).toEqual(["COMPLETED"])
    },
  )

  it("OpenAI Agents: the model reads the result, the run goes on, the operator gets the warning", async () => {
    const { charges, charge } = gateway(0)
    const warnings: string[] = []
    const options = { name: "pay", description: "pay", parameters: pay, execute: charge }
    const guarded = guardToolOptions(receiptLedger(hooks.receipt_append_failed as ReceiptHook), options, {
      binding,
      onWarning: (m) => warnings.push(m),
    })
    const model = new ScriptedModel([[{ callId: "fc_1", name: "pay", args }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const result = await runner.run(
      new Agent({ name: "payer", model: "scripted", tools: [agentsTool(guarded)] }),
      "pay",
    )
    const outputs = result.newItems.filter((i) => i.type === "tool_call_output_item")
    expect(outputs.map((i) => (i as { output: unknown }).output)).toEqual(["paid 500 to acct_1"])
    expect(JSON.stringify(model.requests)).not.toContain("hunter2")
    expect(charges).toEqual(["acct_1:500"])
    expect(warnings).toEqual([expect.stringContaining("receipt_ref r-")])
  })

  it("LangGraph: ToolNode's message is the result, the operator gets the warning", async () => {
    const { charges, charge } = gateway(0)
    const warnings: string[] = []
    const guarded = guardLgTool(
      receiptLedger(hooks.receipt_append_failed as ReceiptHook),
      lcTool(charge, { name: "pay", description: "pay", schema: pay }),
      { binding, onWarning: (m) => warnings.push(m) },
    )
    const graph = scriptedGraph([guarded], [{ id: "call_a", name: "pay", args }])
    const state = await graph.invoke(
      { messages: [{ role: "user", content: "pay" }] },
      { configurable: { thread_id: "t" } },
    )
    expect(toolMessages(state).map((m) => m.content)).toEqual(["paid 500 to acct_1"])
    expect(charges).toEqual(["acct_1:500"])
    expect(warnings).toEqual([expect.stringContaining("receipt_ref r-")])
  })
})
