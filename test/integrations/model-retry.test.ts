// A model told that its payment failed calls again under a new call id: a new ledger key. In the AI SDK's real
// generateText loop and OpenAI Agents' real Runner (scripted models), a payment whose gateway timed out after
// charging must be charged once, however often the model retries.
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, stepCountIs, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
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
