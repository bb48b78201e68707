// Adversarial review of the OpenAI Agents integration in the SDK's real Runner (a scripted Model plays a hostile
// model: it writes the call ids, and after an error it calls again under a new id, as real models do).
import { Agent, Runner, tool } from "@openai/agents"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import {
  ActionLedger,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

async function runAgent(model: ScriptedModel, tools: ReturnType<typeof tool>[]) {
  const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
  const agent = new Agent({ name: "payer", instructions: "pay", model: "scripted", tools })
  const result = await runner.run(agent, "pay", { maxTurns: 6 })
  return result.newItems
    .filter((i) => i.type === "tool_call_output_item")
    .map((i) => (i as { output: unknown }).output)
}

/** A real memory store that can be taken down: every call rejects while `down` is set. */
class FlakyStorage {
  down = false
  readonly inner = new MemoryLedgerStorage()
  readonly storage = new Proxy(this.inner, {
    get: (target, prop, receiver) => {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== "function") return value
      return (...args: unknown[]) => {
        if (this.down) throw new Error("ECONNRESET")
        return value.apply(target, args)
      }
    },
  }) as LedgerStorage
}

const payment = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

describe("OpenAI Agents integration, adversarial", () => {
  it("a storage outage after the effect fails the run (typed), instead of inviting the model to call again", async () => {
    const flaky = new FlakyStorage()
    const ledger = new ActionLedger({ storage: flaky.storage, pollInterval: 0.005, onWarning: () => {} })
    const charges: number[] = []
    const pay = tool(
      guardToolOptions(
        ledger,
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ amount: z.number() }),
          execute: async ({ amount }) => {
            charges.push(amount)
            flaky.down = true // the completion write is lost
            return `paid ${amount}`
          },
        },
        { binding: payment },
      ),
    )
    // The store is back by the next turn, where the model calls again under a new id (the SDK said "try again").
    const model = new ScriptedModel(
      [
        [{ callId: "call_a", name: "pay", args: { amount: 10 } }],
        [{ callId: "call_b", name: "pay", args: { amount: 10 } }],
      ],
      () => {
        flaky.down = false
      },
    )
    const failure = await runAgent(model, [pay]).then(
      () => null,
      (e: unknown) => e,
    )
    // The SDK wraps it (ToolCallError); the ledger's typed error is its `error`.
    expect((failure as { error?: unknown } | null)?.error).toBeInstanceOf(LedgerStorageUnavailableError)
    expect(charges).toEqual([10])
  })

  it("a hard-blocked call does not reach the model as 'Please try again'", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const pay = tool(
      guardToolOptions(
        ledger,
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ amount: z.number() }),
          execute: async () => {
            runs++
            throw new Error("gateway reset mid-charge")
          },
        },
        { binding: payment },
      ),
    )
    const call = { callId: "call_x", name: "pay", args: { amount: 5 } }
    const outputs = await runAgent(new ScriptedModel([[call], [call]]), [pay])
    expect(runs).toBe(1)
    expect(String(outputs[1])).toContain("is UNKNOWN")
    expect(String(outputs[1])).not.toMatch(/try again/i)
  })

  it("an errorFunction the application gives is still used for tool errors", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const pay = tool(
      guardToolOptions(
        ledger,
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ amount: z.number() }),
          execute: async (): Promise<string> => {
            throw new Error("card declined")
          },
          errorFunction: (_ctx: unknown, error: unknown) => `custom: ${String((error as Error).message)}`,
        },
        { binding: { ...payment, sideEffectClass: "read" } },
      ),
    )
    const outputs = await runAgent(
      new ScriptedModel([[{ callId: "c1", name: "pay", args: { amount: 1 } }]]),
      [pay],
    )
    expect(outputs).toEqual(["custom: card declined"])
  })

  it("a tool with an outputSchema keeps the SDK's rule: any error fails the run (no text for the model)", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const pay = tool(
      guardToolOptions(
        ledger,
        {
          name: "pay",
          description: "pay",
          parameters: z.object({ amount: z.number() }),
          outputSchema: z.object({ id: z.string() }),
          execute: async (): Promise<{ id: string }> => {
            throw new Error("card declined")
          },
        },
        { binding: { ...payment, sideEffectClass: "read" } },
      ),
    )
    const failure = await runAgent(
      new ScriptedModel([[{ callId: "c_out", name: "pay", args: { amount: 1 } }]]),
      [pay],
    ).then(
      () => null,
      (e: unknown) => e,
    )
    expect(String((failure as { error?: unknown } | null)?.error)).toContain("card declined")
  })

  it("a model that calls again under a new id after a tool timeout: one payment, keyed by call id or by requestIdFrom", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const options = (requestIdFrom?: string) =>
      tool({
        ...guardToolOptions(
          ledger,
          {
            name: requestIdFrom ? "pay_keyed" : "pay",
            description: "pay",
            parameters: z.object({ orderId: z.string(), amount: z.number() }),
            execute: async ({ amount }) => {
              runs++
              await new Promise((r) => setTimeout(r, 60))
              return `paid ${amount}`
            },
          },
          { binding: { ...payment, ...(requestIdFrom ? { requestIdFrom } : {}) } },
        ),
        // The SDK answers "timed out" and leaves the body running; the model then calls again, under a new id.
        timeoutMs: 15,
      })
    const twice = (name: string) =>
      new ScriptedModel([
        [{ callId: `${name}_1`, name, args: { orderId: "o-1", amount: 3 } }],
        [{ callId: `${name}_2`, name, args: { orderId: "o-1", amount: 3 } }],
      ])
    await runAgent(twice("pay"), [options()])
    await new Promise((r) => setTimeout(r, 120))
    // Keyed by call id, the retry is a new key; it is held as the retry of the call the SDK gave up on while that
    // call's body still ran (abandoned-calls.test.ts has the cases).
    expect(runs).toBe(1)
    runs = 0
    await runAgent(twice("pay_keyed"), [options("orderId")])
    await new Promise((r) => setTimeout(r, 120))
    expect(runs).toBe(1)
    const keyed = (await ledger.listTransitions()).filter((r) => r.tool === "pay_keyed")
    expect(keyed.map((r) => [r.requestId, r.terminalOutcome])).toEqual([
      ["pay_keyed:orderId:o-1", "COMPLETED"],
    ])
  })
})
