// The framework integrations in workerd (see uncaught.ts): a tool whose execute throws before its first await (an
// input check, the usual first line) handed back a promise already rejected, from the AI SDK glue's own async
// function and from the then() that runs a body the ledger does not mark: one report per refused call.
import { tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"
import { guardToolOptions, type ToolCallDetails } from "../../src/integrations/openai-agents.ts"
import { uncaught } from "./uncaught.ts"

const binding = {
  agentId: "payment-agent",
  policyVersion: "2026.07.1",
  sideEffectClass: "keyed_mutate",
} as const

describe("integration rejections in workerd are handled, never reported uncaught", () => {
  it("an AI SDK execute that throws at once, under either boundary mode", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const refund = tool({
      description: "Refund a charge",
      inputSchema: z.object({ charge: z.string() }),
      execute: async ({ charge }) => {
        runs++
        if (!charge.startsWith("ch_")) throw new RangeError(`not a charge id: ${charge}`)
        return { refunded: charge }
      },
    })
    for (const boundary of ["whole", "manual"] as const) {
      const guarded = guardTool(ledger, refund, { name: `refund_${boundary}`, binding, boundary })
      const seen = await uncaught(async () => {
        const call = guarded.execute?.({ charge: "pi_1" }, { toolCallId: `call-${boundary}`, messages: [] })
        await expect(call).rejects.toThrow("not a charge id: pi_1")
      })
      expect(seen).toEqual([])
    }
    expect(runs).toBe(2)
  })

  it("an AI SDK call the ledger refuses at once (its signal already aborted), no failed call held", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const refund = tool({
      description: "Refund a charge",
      inputSchema: z.object({ charge: z.string() }),
      execute: async ({ charge }) => {
        runs++
        return { refunded: charge }
      },
    })
    const guarded = guardTool(ledger, refund, { name: "refund_aborted", binding })
    const gone = new AbortController()
    gone.abort(new Error("the step timed out"))
    // No thread and no experimental_context: nothing is held, and the ledgered call is what the call returns.
    const seen = await uncaught(async () => {
      const call = guarded.execute?.(
        { charge: "ch_1" },
        { toolCallId: "call-aborted", messages: [], abortSignal: gone.signal },
      )
      await expect(call).rejects.toThrow("the step timed out")
    })
    expect(seen).toEqual([])
    expect(runs).toBe(0)
  })

  it("an AI SDK call whose argument is out of its bounds' scope, refused before the claim", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const pay = tool({
      description: "Pay an account",
      inputSchema: z.object({ to: z.string() }),
      execute: async ({ to }) => {
        runs++
        return { paid: to }
      },
    })
    const guarded = guardTool(ledger, pay, {
      name: "pay_scoped",
      binding,
      bounds: { entityParam: "to", entityPattern: "acct_[0-9]+" },
    })
    const seen = await uncaught(async () => {
      const call = guarded.execute?.({ to: "evil" }, { toolCallId: "call-scope", messages: [] })
      await expect(call).rejects.toThrow()
    })
    expect(seen).toEqual([])
    expect(runs).toBe(0)
  })

  it("an OpenAI Agents execute that throws at once, its body left unmarked (manual)", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    let runs = 0
    const refund = guardToolOptions(
      ledger,
      {
        name: "refund",
        parameters: z.object({ charge: z.string() }),
        // The runner's own arguments declared: the test passes the call details the runner would.
        execute: async ({ charge }, _runContext?: unknown, _details?: ToolCallDetails) => {
          runs++
          if (!charge.startsWith("ch_")) throw new RangeError(`not a charge id: ${charge}`)
          return `refunded ${charge}`
        },
      },
      { binding, boundary: "manual" },
    )
    const toolCall = {
      type: "function_call",
      callId: "call-agents",
      name: "refund",
      arguments: "{}",
    } as const
    const seen = await uncaught(async () => {
      await expect(refund.execute({ charge: "pi_2" }, undefined, { toolCall })).rejects.toThrow(
        "not a charge id: pi_2",
      )
    })
    expect(seen).toEqual([])
    expect(runs).toBe(1)
  })
})
