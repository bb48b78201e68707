// A guard's options are checked when wrapping, in every integration: found at a call, a bad one failed every call
// (its error sent to the model), and a `boundary` typo ran the body unmarked, so a retry after a charge paid again.
import { tool as lcTool } from "@langchain/core/tools"
import { tool as aiTool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, InvalidOptionError, MemoryLedgerStorage, MyceliumError } from "../../src/core/index.ts"
import * as aiSdk from "../../src/integrations/ai-sdk.ts"
import * as langgraph from "../../src/integrations/langgraph.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"

const binding = { agentId: "a", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const newLedger = () => new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const inputSchema = z.object({ cents: z.number() })
const charge = () => "charged"

type Guard = (ledger: ActionLedger, options: Record<string, unknown>) => unknown
const guards: Record<string, Guard> = {
  "AI SDK": (ledger, o) =>
    aiSdk.guardTool(ledger, aiTool({ inputSchema, execute: charge }), { name: "charge", ...o }),
  LangGraph: (ledger, o) =>
    langgraph.guardTool(ledger, lcTool(charge, { name: "charge", schema: inputSchema }), o),
  "OpenAI Agents": (ledger, o) =>
    guardToolOptions(ledger, { name: "charge", parameters: inputSchema, execute: charge }, o),
}

// The ledger's own refusals are its LedgerConfigError, the guard's InvalidOptionError: both code invalid_option.
function refused(fn: () => unknown, text: RegExp, type: typeof MyceliumError = InvalidOptionError) {
  expect(fn).toThrow(type)
  expect(fn).toThrow(
    expect.objectContaining({ code: "invalid_option", message: expect.stringMatching(text) }),
  )
}

describe.each(Object.entries(guards))("%s guard options", (_, guard) => {
  it("a boundary other than whole or manual is refused when wrapping, naming the option and the tool", () => {
    for (const boundary of ["Whole", "whole ", true, null])
      refused(
        () => guard(newLedger(), { binding, boundary }),
        /'charge'.*boundary must be "whole" or "manual"/,
      )
    expect(() => guard(newLedger(), { binding, boundary: "manual" })).not.toThrow()
    expect(() => guard(newLedger(), { binding })).not.toThrow()
  })

  it("the ledger's own options are checked when wrapping, not at every call", () => {
    refused(() => guard(newLedger(), { binding, leaseTtl: Number.NaN }), /leaseTtl/, MyceliumError)
    refused(
      () => guard(newLedger(), { binding: { ...binding, sideEffectClass: "keyed_mutat" } }),
      /keyed_mutat/,
      MyceliumError,
    )
    refused(() => guard(newLedger(), { pollTimeout: -1 }), /pollTimeout/, MyceliumError)
  })
})

describe("guardTools options under a key that names no tool", () => {
  const wrong = { chargeCard: { binding } }

  it("AI SDK: refused, naming the key and the tools", () => {
    const tools = { charge_card: aiTool({ inputSchema, execute: charge }) }
    refused(() => aiSdk.guardTools(newLedger(), tools, wrong), /'chargeCard'.*charge_card/)
    expect(() => aiSdk.guardTools(newLedger(), tools, { charge_card: { binding } })).not.toThrow()
  })

  it("LangGraph: refused, naming the key and the tools", () => {
    const tools = [lcTool(charge, { name: "charge_card", schema: inputSchema })]
    refused(() => langgraph.guardTools(newLedger(), tools, wrong), /'chargeCard'.*charge_card/)
    expect(() => langgraph.guardTools(newLedger(), tools, { charge_card: { binding } })).not.toThrow()
  })
})
