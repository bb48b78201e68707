// A stored Command or ToolMessage replayed for another tool call: one row answers several tool-call ids when a
// binding keys calls by a business object (`requestIdFrom`), or when a model's retry is held by a call that completed.
// ToolNode passes a tool's ToolMessage or Command on as it is, so the replay must answer the call it is given to.
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { tool } from "@langchain/core/tools"
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { guardTools } from "../../src/integrations/langgraph.ts"
import { reviveReplayed, storableResult } from "../../src/integrations/langgraph-replay.ts"
import { newLedger, type ToolCall, toolMessages } from "./scripted/langgraph.ts"

/** Asks for each step's tool calls in turn, then answers with text. */
class StepsModel extends BaseChatModel {
  #step = 0
  constructor(readonly steps: ToolCall[][]) {
    super({})
  }
  _llmType(): string {
    return "steps"
  }
  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const calls = this.steps[this.#step++]
    const message = calls ? new AIMessage({ content: "", tool_calls: calls }) : new AIMessage("done")
    return { generations: [{ text: "", message }] }
  }
}

const byOrder = {
  agentId: "billing",
  policyVersion: "1",
  sideEffectClass: "keyed_mutate" as const,
  requestIdFrom: "orderId",
}

/** The model pays order o-1 under call_1, then again under call_2; returns the tool messages and body runs. */
async function payTwice(answer: (orderId: string, callId: string) => unknown, thread: string) {
  let runs = 0
  const pay = tool(
    async ({ orderId }, config) => {
      runs++
      return answer(orderId, config.toolCall?.id ?? "")
    },
    { name: "pay", description: "pay", schema: z.object({ orderId: z.string() }) },
  )
  const model = new StepsModel([
    [{ id: "call_1", name: "pay", args: { orderId: "o-1" } }],
    [{ id: "call_2", name: "pay", args: { orderId: "o-1" } }],
  ])
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode("tools", new ToolNode(guardTools(newLedger(), [pay], { pay: { binding: byOrder } })))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer: new MemorySaver() })
  const out = await graph.invoke(
    { messages: [{ role: "user", content: "pay o-1" }] },
    { configurable: { thread_id: thread } },
  )
  return { messages: toolMessages(out), runs }
}

describe("LangGraph: a stored answer replayed for another tool call", () => {
  it("one order paid under two call ids: the replayed Command answers the second call, the body ran once", async () => {
    const { messages, runs } = await payTwice(
      (order, id) =>
        new Command({
          update: { messages: [new ToolMessage({ content: `paid ${order}`, tool_call_id: id })] },
        }),
      "t-order-cmd",
    )
    expect(runs).toBe(1)
    expect(messages.map((m) => [m.tool_call_id, m.content])).toEqual([
      ["call_1", "paid o-1"],
      ["call_2", "paid o-1"],
    ])
  })

  it("a ToolMessage with its own message id is replayed as a new message, not put in place of the first answer", async () => {
    const { messages, runs } = await payTwice(
      (order, id) => new ToolMessage({ id: `msg_${order}`, content: `paid ${order}`, tool_call_id: id }),
      "t-order-msg",
    )
    expect(runs).toBe(1)
    expect(messages.map((m) => m.tool_call_id)).toEqual(["call_1", "call_2"])
    expect(messages[0]?.id).toBe("msg_o-1")
  })

  it("a Command stored by one call and revived for another: only the first call's answers change hands", async () => {
    const other = new ToolMessage({ content: "earlier", tool_call_id: "call_0" })
    const answer = new ToolMessage({ content: "paid", tool_call_id: "call_1", id: "m1" })
    const live = new Command({
      update: [
        ["messages", [other, answer, new AIMessage("noted")]],
        ["log", { role: "tool", content: "paid", tool_call_id: "call_1" }],
      ],
    })
    const stored = JSON.parse(JSON.stringify(storableResult(live, "call_1")))
    const retry = (await reviveReplayed(stored, "call_2")) as Command
    const [[, msgs], [, log]] = retry.update as [[string, BaseMessage[]], [string, unknown]]
    expect(msgs.map((m) => [m.constructor.name, (m as ToolMessage).tool_call_id, m.id])).toEqual([
      ["ToolMessage", "call_0", undefined],
      ["ToolMessage", "call_2", undefined],
      ["AIMessage", undefined, undefined],
    ])
    expect(log).toEqual({ role: "tool", content: "paid", tool_call_id: "call_2", id: undefined })
    // The same call's replay (a checkpoint) is the stored answer as it was; so is the stored row.
    const same = (await reviveReplayed(stored, "call_1")) as Command
    const [[, again]] = same.update as [[string, BaseMessage[]]]
    expect([again[1]?.id, (again[1] as ToolMessage).tool_call_id]).toEqual(["m1", "call_1"])
    expect(stored.update[1][1].tool_call_id).toBe("call_1")
  })
  it("other state data naming the first call keeps its id and its call: only a tool message changes hands", async () => {
    const payment = { id: "pay_7", tool_call_id: "call_1", amount: 5 }
    const live = new Command({
      update: {
        messages: [new ToolMessage({ content: "paid", tool_call_id: "call_1" })],
        payments: [payment],
      },
    })
    const stored = JSON.parse(JSON.stringify(storableResult(live, "call_1")))
    const retry = (await reviveReplayed(stored, "call_2")) as Command
    const update = retry.update as { messages: ToolMessage[]; payments: unknown[] }
    expect(update.messages.map((m) => [m.tool_call_id, m.id])).toEqual([["call_2", undefined]])
    expect(update.payments).toEqual([payment])
  })
})
