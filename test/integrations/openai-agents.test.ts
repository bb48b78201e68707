// The OpenAI Agents integration in the SDK's real Runner, with a scripted Model behind a ModelProvider.
import { Agent, type RunContext, Runner, tool } from "@openai/agents"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { agentsCallMeta, guardToolOptions, transitionOf } from "../../src/integrations/openai-agents.ts"
import { type Call, ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const payment = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate" as const,
}
const newLedger = (storage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} })

async function runAgent(turns: Call[][], tools: ReturnType<typeof tool>[]) {
  const model = new ScriptedModel(turns)
  const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
  const agent = new Agent({ name: "payer", instructions: "pay", model: "scripted", tools })
  const result = await runner.run(agent, "pay acct_123 100", { maxTurns: 6 })
  const outputs = result.newItems
    .filter((i) => i.type === "tool_call_output_item")
    .map((i) => (i as { output: unknown }).output)
  return { result, outputs, model }
}

function paymentTool(ledger: ActionLedger, charges: number[]) {
  return tool(
    guardToolOptions(
      ledger,
      {
        name: "send_payment",
        description: "Charge a customer",
        parameters: z.object({ amount: z.number(), recipient: z.string() }),
        execute: async ({ amount, recipient }) => {
          charges.push(amount)
          return `charged ${amount} to ${recipient} (#${charges.length})`
        },
      },
      { binding: payment },
    ),
  )
}

describe("OpenAI Agents integration", () => {
  it("a function call redispatched in a later turn (same callId) runs once and returns the recorded output", async () => {
    const charges: number[] = []
    const ledger = newLedger()
    const call = { callId: "call_pay_1", name: "send_payment", args: { amount: 100, recipient: "acct_123" } }
    const { result, outputs } = await runAgent([[call], [call]], [paymentTool(ledger, charges)])
    expect(result.finalOutput).toBe("done")
    expect(charges).toEqual([100])
    expect(outputs).toEqual(["charged 100 to acct_123 (#1)", "charged 100 to acct_123 (#1)"])
    const rows = await ledger.listTransitions()
    expect(rows).toHaveLength(1)
    expect(rows[0]?.kwargs.tool_call_id).toBe("call_pay_1")
    expect(rows[0]?.terminalOutcome).toBe("COMPLETED")
  })

  it("two copies of one call in a turn race (the runner runs them in parallel): one runs, both get its output", async () => {
    let executions = 0
    const ledger = newLedger()
    const slow = tool(
      guardToolOptions(
        ledger,
        {
          name: "send_email",
          description: "send",
          parameters: z.object({ to: z.string() }),
          execute: async ({ to }) => {
            executions++
            await new Promise((r) => setTimeout(r, 40))
            return `sent to ${to}`
          },
        },
        { binding: { ...payment, sideEffectClass: "non_idempotent_mutate" } },
      ),
    )
    const call = { callId: "call_dup", name: "send_email", args: { to: "a@example.com" } }
    const { outputs } = await runAgent([[call, { ...call }]], [slow])
    expect(executions).toBe(1)
    expect(outputs).toEqual(["sent to a@example.com", "sent to a@example.com"])
  })

  it("after a restart (a new runner and ledger on the same store) the same call replays", async () => {
    const charges: number[] = []
    const storage = new MemoryLedgerStorage()
    const call = { callId: "call_restart", name: "send_payment", args: { amount: 3, recipient: "acct_1" } }
    for (let i = 0; i < 3; i++) {
      const { outputs } = await runAgent([[call]], [paymentTool(newLedger(storage), charges)])
      expect(outputs).toEqual(["charged 3 to acct_1 (#1)"])
    }
    expect(charges).toEqual([3])
  })

  it("a crash inside the side effect is UNKNOWN, the redispatch is hard-blocked, a release allows one re-run", async () => {
    let executions = 0
    let crash = true
    const ledger = newLedger()
    const charge = tool(
      guardToolOptions(
        ledger,
        {
          name: "charge",
          description: "charge",
          parameters: z.object({ amount: z.number() }),
          execute: async ({ amount }, _ctx, details) =>
            transitionOf(details).sideEffect(async () => {
              executions++
              if (crash) throw new Error("gateway connection reset")
              return `charged ${amount}`
            }),
        },
        { binding: payment, boundary: "manual" },
      ),
    )
    const call = { callId: "call_crash", name: "charge", args: { amount: 9 } }
    const first = await runAgent([[call]], [charge])
    expect(String(first.outputs[0])).toContain("gateway connection reset")
    const row = (await ledger.listTransitions())[0]!
    expect(row.terminalOutcome).toBe("UNKNOWN")

    crash = false
    const blocked = await runAgent([[call]], [charge])
    expect(String(blocked.outputs[0])).toMatch(/hard|ambiguous|UNKNOWN/i)
    expect(executions).toBe(1)

    await ledger.release(row.requestId, {
      verified: "not_executed",
      by: "ops",
      reason: "no charge at the gateway",
    })
    expect((await runAgent([[call]], [charge])).outputs).toEqual(["charged 9"])
    expect((await runAgent([[call]], [charge])).outputs).toEqual(["charged 9"])
    expect(executions).toBe(2)
  })

  it("call metadata comes from the function call item; a nameless tool and a foreign details object are refused", () => {
    expect(
      agentsCallMeta({
        toolCall: { type: "function_call", callId: "c9", name: "t", arguments: "{}" },
      }),
    ).toEqual({ toolCallId: "c9" })
    expect(() =>
      guardToolOptions(newLedger(), { name: "", execute: async () => "x" }, { binding: payment }),
    ).toThrowError(expect.objectContaining({ code: "tool_needs_a_name" }))
    expect(() => transitionOf({})).toThrowError(expect.objectContaining({ code: "not_a_guarded_call" }))
    // An execute typed for the agent's own context type is accepted as it is.
    const typed = guardToolOptions(newLedger(), {
      name: "whoami",
      parameters: z.object({}),
      execute: async (_input, ctx?: RunContext<{ userId: string }>) => ctx?.context.userId ?? "nobody",
    })
    expect(typed.name).toBe("whoami")
  })

  it("meta() maps the run context into the ledger's scope (here: a conversation id as the thread)", async () => {
    const ledger = newLedger()
    const lookup = tool(
      guardToolOptions(
        ledger,
        {
          name: "lookup",
          description: "look up",
          parameters: z.object({ q: z.string() }),
          execute: async ({ q }) => `found ${q}`,
        },
        {
          binding: { ...payment, sideEffectClass: "read" },
          meta: (ctx) => ({
            threadId: (ctx?.context as { conversationId?: string } | undefined)?.conversationId,
          }),
        },
      ),
    )
    const model = new ScriptedModel([[{ callId: "call_q", name: "lookup", args: { q: "x" } }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const agent = new Agent<{ conversationId: string }>({ name: "a", model: "scripted", tools: [lookup] })
    await runner.run(agent, "find x", { context: { conversationId: "conv-42" } })
    const rows = await ledger.listTransitions()
    expect(rows[0]?.kwargs).toMatchObject({ tool_call_id: "call_q", thread_id: "conv-42" })
  })
})
