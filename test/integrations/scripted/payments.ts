// What the abandoned-call tests share: a slow payment gateway, a model that pauses between turns, and a guarded
// `pay` tool run through OpenAI Agents' real Runner (with the SDK's `timeoutMs`) or the AI SDK's generateText.
import { Agent, tool as agentsTool, type ModelRequest, type ModelResponse, Runner } from "@openai/agents"
import { generateText, stepCountIs, tool } from "ai"
import { z } from "zod"
import type { ActionLedger } from "../../../src/core/index.ts"
import { guardTool } from "../../../src/integrations/ai-sdk.ts"
import { type GuardAgentsToolOptions, guardToolOptions } from "../../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./ai-sdk.ts"
import { type Call, ScriptedModel, ScriptedProvider } from "./openai-agents.ts"

export const binding = {
  agentId: "billing",
  policyVersion: "1",
  sideEffectClass: "non_idempotent_mutate" as const,
}
export const args = { to: "acct_1", cents: 500 }
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
export type Charge = (a: { to: string; cents: number }) => Promise<string>

/** A gateway that takes `ms` to answer; `fail` decides whether (and where) the n-th call fails. */
export function slowGateway(ms: number, fail: (n: number) => "before" | "after" | null = () => null) {
  const charges: string[] = []
  let n = 0
  const charge: Charge = async ({ to, cents }) => {
    const mine = ++n
    await sleep(ms)
    if (fail(mine) === "before") throw new Error("gateway refused the charge")
    charges.push(`${to}:${cents}`)
    if (fail(mine) === "after") throw new Error("gateway connection reset after the charge")
    return `paid ${cents} to ${to}`
  }
  /** Charges begun so far: a test waits for the first to be under way instead of guessing how long that takes. */
  return { charges, charge, begun: () => n }
}

/** A scripted model that waits `pause[turn]` ms before that turn (a slow model, a human in the loop). */
export class PausingModel extends ScriptedModel {
  constructor(
    turns: Call[][],
    readonly pause: Record<number, number>,
    onTurn?: (turn: number) => void,
  ) {
    super(turns, onTurn)
  }
  override async getResponse(request: ModelRequest): Promise<ModelResponse> {
    await sleep(this.pause[this.requests.length] ?? 0)
    return super.getResponse(request)
  }
}

/** `n` turns of one `pay` call each, `fc_1`…`fc_n`. */
export const payTurns = (n: number): Call[][] =>
  Array.from({ length: n }, (_, i) => [{ callId: `fc_${i + 1}`, name: "pay", args }])

/**
 * The guarded OpenAI Agents `pay` tool whose `execute` is `charge`, timed out by the SDK after `timeoutMs` (when
 * given); `guard` adds to the guard's options (a thread id, a poll timeout).
 */
export function agentsPay(
  ledger: ActionLedger,
  charge: Charge,
  timeoutMs?: number,
  guard: Omit<GuardAgentsToolOptions, "binding"> = {},
) {
  return agentsTool({
    ...guardToolOptions(
      ledger,
      {
        name: "pay",
        description: "pay",
        parameters: z.object({ to: z.string(), cents: z.number() }),
        execute: charge,
      },
      { binding, ...guard },
    ),
    ...(timeoutMs ? { timeoutMs } : {}),
  })
}

/** Runs `model` with the tool `pay`; the text of each tool output, in order. */
export async function runPayer(model: ScriptedModel, pay: ReturnType<typeof agentsTool>): Promise<string[]> {
  const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
  const result = await runner.run(new Agent({ name: "payer", model: "scripted", tools: [pay] }), "pay", {
    maxTurns: 8,
  })
  return result.newItems
    .filter((i) => i.type === "tool_call_output_item")
    .map((i) => JSON.stringify((i as { output: unknown }).output))
}

/** The guarded AI SDK `pay` tool whose `execute` is `charge`, on thread t-1 (`pollTimeout`: a redispatch's wait). */
export function aiSdkPayTool(ledger: ActionLedger, charge: Charge, pollTimeout?: number) {
  return guardTool(
    ledger,
    tool({
      description: "pay",
      inputSchema: z.object({ to: z.string(), cents: z.number() }),
      execute: charge,
    }),
    {
      name: "pay",
      binding,
      ...(pollTimeout !== undefined && { pollTimeout }),
      meta: () => ({ threadId: "t-1" }),
    },
  )
}

/**
 * The guarded AI SDK `pay` tool whose `execute` is `charge`, on thread t-1, and one generateText run of a single
 * call `id` to it (aborted by `abortSignal` when given).
 */
export function aiSdkPayer(ledger: ActionLedger, charge: Charge) {
  const pay = aiSdkPayTool(ledger, charge)
  return (id: string, abortSignal?: AbortSignal) =>
    generateText({
      model: scriptedModel([[{ id, tool: "pay", input: args }]]),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(3),
      ...(abortSignal ? { abortSignal } : {}),
    })
}
