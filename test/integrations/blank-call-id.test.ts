// A provider that sends "" as the tool-call id (Gemini's OpenAI-compatible endpoint; @ai-sdk/openai-compatible keeps
// it, OpenAI Agents passes callId ""). Without an id, a side-effecting call's ledger key would be its arguments alone,
// which in the AI SDK and OpenAI Agents (no thread by default) is every conversation's: Carol's "pay bob 10" replayed
// Alice's receipt and never ran, and a read replayed one user's answer to another. Such a call is refused before the
// claim; a tool without a binding, a `requestIdFrom` key, or an id or a thread from `meta` run as before.
import { Agent, tool as agentsTool, Runner } from "@openai/agents"
import { generateText, stepCountIs, type ToolExecutionOptions, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { type GuardAiToolsOptions, guardTools } from "../../src/integrations/ai-sdk.ts"
import { type GuardAgentsToolOptions, guardToolOptions } from "../../src/integrations/openai-agents.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { ScriptedModel, ScriptedProvider } from "./scripted/openai-agents.ts"

const billing = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const newLedger = () =>
  new ActionLedger({ storage: new MemoryLedgerStorage(), pollInterval: 0.005, onWarning: () => {} })
const users = ["alice", "carol"]

/** Each user's run of `pay` under a blank call id through the AI SDK: what each model was told, who paid. */
async function aiSdkRuns(ledger: ActionLedger, options: GuardAiToolsOptions["pay"]) {
  const paid: string[] = []
  const tools = guardTools(
    ledger,
    {
      pay: tool({
        inputSchema: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }, { experimental_context }) => {
          const user = (experimental_context as { user: string }).user
          paid.push(user)
          return { receipt: `${user} paid ${cents} to ${to}` }
        },
      }),
    },
    { pay: options },
  )
  const told: Array<{ type: string; output?: { receipt: string }; error?: Error & { code?: string } }> = []
  for (const user of users) {
    const r = await generateText({
      model: scriptedModel([[{ id: "", tool: "pay", input: { to: "bob", cents: 10 } }]]),
      tools,
      prompt: "pay bob 10",
      experimental_context: { user },
      stopWhen: stepCountIs(3),
    })
    told.push(
      ...(r.steps.flatMap((s) =>
        s.content.filter((p) => p.type === "tool-result" || p.type === "tool-error"),
      ) as typeof told),
    )
  }
  return { paid, told }
}

/** The same through OpenAI Agents' Runner (callId ""): the tool outputs each run produced, and who paid. */
async function agentsRuns(ledger: ActionLedger, guard: GuardAgentsToolOptions) {
  const paid: string[] = []
  const pay = agentsTool(
    guardToolOptions(
      ledger,
      {
        name: "pay",
        description: "pay",
        parameters: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }: { to: string; cents: number }, ctx) => {
          const user = (ctx?.context as { user: string } | undefined)?.user ?? "?"
          paid.push(user)
          return `${user} paid ${cents} to ${to}`
        },
      },
      guard,
    ),
  )
  const agent = new Agent({ name: "a", instructions: "", tools: [pay] })
  const seen: string[] = []
  for (const user of users) {
    const model = new ScriptedModel([[{ callId: "", name: "pay", args: { to: "bob", cents: 10 } }]])
    const runner = new Runner({ modelProvider: new ScriptedProvider(model), tracingDisabled: true })
    const r = await runner.run(agent, "pay bob 10", { context: { user } })
    for (const item of r.newItems)
      if (item.type === "tool_call_output_item") seen.push(String((item as { output: unknown }).output))
  }
  return { paid, seen }
}

describe("AI SDK: a blank tool-call id", () => {
  it("two users' runs paying bob 10 are refused, never one replayed to the other; nothing is written", async () => {
    const ledger = newLedger()
    const { paid, told } = await aiSdkRuns(ledger, { binding: billing })
    expect(paid).toEqual([])
    expect(told.map((t) => t.type)).toEqual(["tool-error", "tool-error"])
    expect(told[1]?.error?.code).toBe("missing_tool_call_id")
    expect(told[1]?.error?.message).toContain("Tool 'pay' got no tool-call id")
    expect(told[1]?.error?.message).toContain("requestIdFrom")
    expect(await ledger.listTransitions()).toEqual([])
  })

  it("an id or a thread from meta, or a requestIdFrom key, lets the call run", async () => {
    let n = 0
    const fromMeta = await aiSdkRuns(newLedger(), {
      binding: billing,
      meta: (o: ToolExecutionOptions) => ({
        toolCallId: `${(o.experimental_context as { user: string }).user}-${n++}`,
      }),
    })
    expect(fromMeta.paid).toEqual(users)
    expect(fromMeta.told.map((t) => t.output?.receipt)).toEqual([
      "alice paid 10 to bob",
      "carol paid 10 to bob",
    ])
    // A thread from meta keys the call by its arguments in that thread (LangGraph's documented key): each user's runs.
    const threads = await aiSdkRuns(newLedger(), {
      binding: billing,
      meta: (o: ToolExecutionOptions) => ({ threadId: (o.experimental_context as { user: string }).user }),
    })
    expect(threads.paid).toEqual(users)
    // A business key spans conversations by design: the second call for the same key replays the first.
    const keyed = await aiSdkRuns(newLedger(), { binding: { ...billing, requestIdFrom: "to" } })
    expect(keyed.paid).toEqual(["alice"])
  })

  // A read is refused too: keyed by its arguments alone, Carol was answered from Alice's stored read. A tool without a
  // binding is a fresh id per call, and runs.
  it("a read is refused too; a tool without a binding runs as before", async () => {
    const read = await aiSdkRuns(newLedger(), { binding: { ...billing, sideEffectClass: "read" } })
    expect(read.paid).toEqual([])
    const unbound = await aiSdkRuns(newLedger(), {})
    expect(unbound.paid).toEqual(users)
    expect(unbound.told.map((t) => t.output?.receipt)).toEqual([
      "alice paid 10 to bob",
      "carol paid 10 to bob",
    ])
  })
})

describe("OpenAI Agents: a blank callId", () => {
  it("two runs paying bob 10 are refused, never one replayed to the other; the model reads why", async () => {
    const ledger = newLedger()
    const { paid, seen } = await agentsRuns(ledger, { binding: billing })
    expect(paid).toEqual([])
    expect(seen).toHaveLength(2)
    for (const s of seen) expect(s).toContain("Tool 'pay' got no tool-call id")
    expect(await ledger.listTransitions()).toEqual([])
  })

  it("an id from meta lets each call run; a read is refused too; a tool without a binding runs as before", async () => {
    let n = 0
    const fromMeta = await agentsRuns(newLedger(), {
      binding: billing,
      meta: () => ({ requestId: `pay-${n++}` }),
    })
    expect(fromMeta.paid).toEqual(users)
    expect(fromMeta.seen).toEqual(["alice paid 10 to bob", "carol paid 10 to bob"])
    const read = await agentsRuns(newLedger(), { binding: { ...billing, sideEffectClass: "read" } })
    expect(read.paid).toEqual([])
    for (const s of read.seen) expect(s).toContain("got no tool-call id")
    const unbound = await agentsRuns(newLedger(), {})
    expect(unbound.seen).toEqual(["alice paid 10 to bob", "carol paid 10 to bob"])
  })
})
