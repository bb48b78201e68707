// Adversarial review of the held retry through OpenAI Agents' real Runner (scripted model): the hard block must be
// something an operator can act on (the request it names exists and can be released), and guarded copies of one
// tool on one ledger share the hold.
import { Agent, tool as agentsTool, type ModelRequest, type ModelResponse, Runner } from "@openai/agents"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const args = { to: "acct_1", cents: 500 }

function payTool(ledger: ActionLedger, charges: string[], failures: number) {
  let left = failures
  return agentsTool(
    guardToolOptions(
      ledger,
      {
        name: "pay",
        description: "pay",
        parameters: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }: { to: string; cents: number }) => {
          charges.push(`${to}:${cents}`)
          if (left-- > 0) throw new Error("gateway timed out")
          return `paid ${cents} to ${to}`
        },
      },
      { binding },
    ),
  )
}

/** The text of every tool output the run produced, in order. */
function outputs(items: ReadonlyArray<{ type: string }>): string[] {
  return items
    .filter((i) => i.type === "tool_call_output_item")
    .map((i) => JSON.stringify((i as unknown as { output: unknown }).output))
}

/** A scripted model whose operator acts on what the model was told before the model's `turn`-th answer. */
class OperatedModel extends ScriptedModel {
  constructor(
    turns: ConstructorParameters<typeof ScriptedModel>[0],
    readonly operator: (told: string, turn: number) => Promise<void>,
  ) {
    super(turns)
  }
  override async getResponse(request: ModelRequest): Promise<ModelResponse> {
    await this.operator(JSON.stringify(request.input), this.requests.length)
    return super.getResponse(request)
  }
}

describe("OpenAI Agents held retry: what the hard block tells the operator", () => {
  it("names a request the ledger holds as UNKNOWN; once that is released as not executed, the retry runs once", async () => {
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const charges: string[] = []
    const pay = payTool(ledger, charges, 1)
    const rows: Array<{ terminalOutcome: string; tool: string } | null> = []
    const model = new OperatedModel(
      [1, 2, 3].map((i) => [{ callId: `fc_${i}`, name: "pay", args }]),
      async (told, turn) => {
        if (turn !== 2) return
        // The operator reads the request id out of what the model was told, checks it, and settles it.
        const id = /settle request '([0-9a-f]{64})'/.exec(told)?.[1]
        if (!id) throw new Error(`no request id in: ${told}`)
        rows.push(await ledger.get(id))
        await ledger.release(id, { verified: "not_executed", by: "ops", reason: "no charge at the gateway" })
      },
    )
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const agent = new Agent({ name: "payer", model: "scripted", tools: [pay] })
    const result = await runner.run(agent, "pay", { maxTurns: 6 })
    expect(rows).toMatchObject([{ terminalOutcome: "UNKNOWN", tool: "pay" }])
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
    const said = outputs(result.newItems)
    expect(said).toHaveLength(3)
    expect(said[1]).toContain("Do not call it again")
    expect(said[2]).toContain("paid 500")
  })
})
