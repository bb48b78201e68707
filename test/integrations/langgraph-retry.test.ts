// A model that is told its tool call failed calls again, with a new tool-call id: a new ledger key. These run a
// real StateGraph whose model does exactly that, against a payment that took effect and then failed.
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { type StructuredToolInterface, tool } from "@langchain/core/tools"
import {
  Command,
  END,
  interrupt,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph"
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import type { ActionLedger } from "../../src/core/index.ts"
import { type BoundaryMode, guardTools, transitionOf } from "../../src/integrations/langgraph.ts"
import { newLedger } from "./scripted/langgraph.ts"

let ids = 0

/** Calls `pay` with the same arguments until a call succeeds or `tries` calls were made; a new id each time. */
class RetryingModel extends BaseChatModel {
  constructor(
    readonly args: Record<string, unknown>,
    readonly tries: number,
  ) {
    super({})
  }
  _llmType(): string {
    return "retrying"
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const results = messages.filter((m): m is ToolMessage => m instanceof ToolMessage)
    const last = messages.at(-1)
    const failed = last instanceof ToolMessage && last.status === "error"
    const again = !(last instanceof ToolMessage) || (failed && results.length < this.tries)
    const message = again
      ? new AIMessage({
          content: "",
          tool_calls: [{ id: `call_${++ids}`, name: "pay", args: this.args }],
        })
      : new AIMessage(`done: ${String(last?.content)}`)
    return { generations: [{ text: String(message.content), message }] }
  }
}

function graphOf(tools: StructuredToolInterface[], args: Record<string, unknown>, tries = 3) {
  const model = new RetryingModel(args, tries)
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new ToolNode(tools))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer: new MemorySaver() })
}

type Class = "non_idempotent_mutate" | "keyed_mutate" | "idempotent_mutate"

/** A payment that charges, then fails `failures` times (the gateway timed out after charging). */
function setup(
  options: { cls?: Class; boundary?: BoundaryMode; failBeforeEffect?: boolean; failures?: number } = {},
) {
  const charges: string[] = []
  let failures = options.failures ?? 1
  const ledger = newLedger()
  const pay = tool(
    async ({ to, cents }, config) => {
      if (options.failBeforeEffect && failures-- > 0) throw new Error("recipient lookup failed")
      const charge = async () => {
        charges.push(`${to}:${cents}`)
        if (!options.failBeforeEffect && failures-- > 0) throw new Error("gateway timed out")
        return `paid ${cents} to ${to}`
      }
      return options.boundary === "manual" ? transitionOf(config).sideEffect(charge) : charge()
    },
    { name: "pay", description: "pay", schema: z.object({ to: z.string(), cents: z.number() }) },
  )
  const binding = {
    agentId: "billing",
    policyVersion: "1",
    sideEffectClass: options.cls ?? "non_idempotent_mutate",
  }
  const tools = guardTools(ledger, [pay], { pay: { binding, boundary: options.boundary ?? "whole" } })
  return { ledger, charges, tools }
}

const ask = (graph: ReturnType<typeof graphOf>, thread: string) =>
  graph.invoke({ messages: [{ role: "user", content: "pay" }] }, { configurable: { thread_id: thread } })

const contents = (state: { messages: BaseMessage[] }) =>
  state.messages.filter((m): m is ToolMessage => m instanceof ToolMessage).map((m) => String(m.content))

const onlyRow = async (ledger: ActionLedger) => {
  const rows = await ledger.listTransitions()
  expect(rows).toHaveLength(1)
  return rows[0] as NonNullable<(typeof rows)[0]>
}

/** An operator's verdict on the thread's one (ambiguous) row. */
async function settle(
  ledger: ActionLedger,
  verdict: { verified: "completed" | "not_executed"; reason: string; result?: unknown },
) {
  const row = await onlyRow(ledger)
  await ledger.release(row.requestId, {
    ...verdict,
    by: "ops",
    overrideDeathSignal: "the worker is this test",
  })
}

describe("LangGraph: a model's retry of a call that may have taken effect", () => {
  it("the gateway timed out after charging: the model's two retries (new ids) are refused, one charge", async () => {
    const { ledger, charges, tools } = setup()
    const out = await ask(graphOf(tools, { to: "acct_1", cents: 500 }), "t-timeout")
    expect(charges).toEqual(["acct_1:500"])
    const [first, ...retries] = contents(out)
    expect(first).toContain("gateway timed out")
    expect(retries).toHaveLength(2)
    for (const r of retries)
      expect(r).toMatch(/already ran with these arguments in this conversation .*Do not call it again/)
    expect((await onlyRow(ledger)).terminalOutcome).toBe("UNKNOWN")
  })

  it("after an operator settles it as completed, a retry gets the recorded result and nothing is charged", async () => {
    const { ledger, charges, tools } = setup()
    const graph = graphOf(tools, { to: "acct_2", cents: 700 }, 1)
    await ask(graph, "t-settled")
    await settle(ledger, {
      verified: "completed",
      reason: "gateway shows the charge",
      result: "paid 700 to acct_2",
    })
    const out = await ask(graph, "t-settled")
    expect(contents(out).at(-1)).toBe("paid 700 to acct_2")
    expect(charges).toEqual(["acct_2:700"])
    // The retry has its answer; asking again afterwards is a new payment.
    const again = await ask(graph, "t-settled")
    expect(contents(again).at(-1)).toBe("paid 700 to acct_2")
    expect(charges).toEqual(["acct_2:700", "acct_2:700"])
  })

  it("a call that paused in interrupt() and then ran does not hold a later call with the same arguments", async () => {
    const charges: string[] = []
    const pay = tool(
      async ({ to, cents }, config) => {
        if (interrupt({ question: `pay ${cents} to ${to}?` }) !== "yes") return "not approved"
        return transitionOf(config).sideEffect(async () => {
          charges.push(`${to}:${cents}`)
          return `paid ${cents} to ${to}`
        })
      },
      { name: "pay", description: "pay", schema: z.object({ to: z.string(), cents: z.number() }) },
    )
    const binding = {
      agentId: "billing",
      policyVersion: "1",
      sideEffectClass: "non_idempotent_mutate" as const,
    }
    const tools = guardTools(newLedger(), [pay], { pay: { binding, boundary: "manual" } })
    const graph = graphOf(tools, { to: "acct_8", cents: 100 }, 1)
    const config = { configurable: { thread_id: "t-approved" } }
    for (let i = 0; i < 2; i++) {
      await graph.invoke({ messages: [{ role: "user", content: "pay" }] }, config)
      await graph.invoke(new Command({ resume: "yes" }), config)
    }
    expect(charges).toEqual(["acct_8:100", "acct_8:100"])
  })

  it("after an operator releases it as not executed, the retry runs, once", async () => {
    const { ledger, charges, tools } = setup()
    const graph = graphOf(tools, { to: "acct_3", cents: 100 }, 1)
    await ask(graph, "t-released")
    await settle(ledger, { verified: "not_executed", reason: "gateway has no such charge" })
    const out = await ask(graph, "t-released")
    expect(contents(out).at(-1)).toBe("paid 100 to acct_3")
    expect(charges).toEqual(["acct_3:100", "acct_3:100"])
    // Settled: a third ask in the thread is a new payment again only through the ledger's own rules.
    expect((await ledger.listTransitions()).filter((r) => r.terminalOutcome === "COMPLETED")).toHaveLength(1)
  })

  it("a failure before the side effect (boundary manual) is no reason to refuse: the retry runs", async () => {
    const { charges, tools } = setup({ boundary: "manual", failBeforeEffect: true })
    const out = await ask(graphOf(tools, { to: "acct_4", cents: 100 }), "t-before")
    expect(contents(out)).toEqual([expect.stringContaining("recipient lookup failed"), "paid 100 to acct_4"])
    expect(charges).toEqual(["acct_4:100"])
  })

  it("other arguments, or another thread, are another intent and run", async () => {
    const { charges, tools } = setup({ failures: 1 })
    await ask(graphOf(tools, { to: "acct_5", cents: 100 }, 1), "t-a")
    await ask(graphOf(tools, { to: "acct_5", cents: 100 }, 1), "t-b")
    await ask(graphOf(tools, { to: "acct_5", cents: 101 }, 1), "t-a")
    expect(charges).toEqual(["acct_5:100", "acct_5:100", "acct_5:101"])
  })

  it("an idempotent_mutate tool is not held: repeating it is harmless by its own declaration", async () => {
    const { charges, tools } = setup({ cls: "idempotent_mutate" })
    const out = await ask(graphOf(tools, { to: "acct_6", cents: 100 }), "t-idem")
    expect(contents(out).at(-1)).toBe("paid 100 to acct_6")
    expect(charges).toEqual(["acct_6:100", "acct_6:100"])
  })

  it("the same arguments in another key order are the same intent", async () => {
    const { charges, tools } = setup()
    const graph = graphOf(tools, { to: "acct_7", cents: 100 }, 1)
    await ask(graph, "t-order")
    const swapped = graphOf(tools, { cents: 100, to: "acct_7" }, 1)
    const out = await swapped.invoke(
      { messages: [{ role: "user", content: "again" }] },
      { configurable: { thread_id: "t-order" } },
    )
    expect(contents(out).at(-1)).toContain("already ran with these arguments")
    expect(charges).toEqual(["acct_7:100"])
  })
})
