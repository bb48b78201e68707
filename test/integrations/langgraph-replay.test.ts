// A guarded LangGraph tool that returns a Command (its documented way to update graph state) or a message: the
// ledger stores the result as JSON, and a replay from the checkpoint must hand ToolNode the same kind of value, not
// its JSON text, or the replay's state update is lost and the model reads a dump.
import { AIMessage, ToolMessage } from "@langchain/core/messages"
import { tool } from "@langchain/core/tools"
import { Command, END, MemorySaver, MessagesAnnotation, Send, START, StateGraph } from "@langchain/langgraph"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { guardTools } from "../../src/integrations/langgraph.ts"
import { reviveReplayed, storableResult } from "../../src/integrations/langgraph-replay.ts"
import { checkpointBeforeTools, newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const keyed = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }
const schema = z.object({ to: z.string() })

/** Runs the graph once, then replays its tool step from the checkpoint; returns both tool-message lists. */
async function runAndReplay(body: (to: string, callId: string) => unknown, thread: string) {
  let runs = 0
  const pay = tool(
    async ({ to }, config) => {
      runs++
      return body(to, config.toolCall?.id ?? "")
    },
    { name: "pay", description: "pay", schema },
  )
  const graph = scriptedGraph(guardTools(newLedger(), [pay], { pay: { binding: keyed } }), [
    { id: `call_${thread}`, name: "pay", args: { to: "acct_1" } },
  ])
  const first = await graph.invoke(
    { messages: [{ role: "user", content: "pay" }] },
    { configurable: { thread_id: thread } },
  )
  const checkpointId = await checkpointBeforeTools(graph, thread)
  const replay = await graph.invoke(null, {
    configurable: { thread_id: thread, checkpoint_id: checkpointId },
  })
  return { first: toolMessages(first), replay: toolMessages(replay), runs: () => runs }
}

describe("LangGraph replay of a stored Command or message", () => {
  it("a tool returning a Command: the replay applies the same update and the body ran once", async () => {
    const { first, replay, runs } = await runAndReplay(
      (to, id) =>
        new Command({ update: { messages: [new ToolMessage({ content: `paid ${to}`, tool_call_id: id })] } }),
      "t-cmd",
    )
    expect(runs()).toBe(1)
    expect(first.map((m) => m.content)).toEqual(["paid acct_1"])
    expect(replay.map((m) => m.content)).toEqual(["paid acct_1"])
    expect(replay[0]).toBeInstanceOf(ToolMessage)
    expect(replay[0]?.tool_call_id).toBe("call_t-cmd")
  })

  it("a tool returning a ToolMessage: the replay returns a ToolMessage, not its JSON", async () => {
    const { replay, runs } = await runAndReplay(
      (to, id) => new ToolMessage({ content: `paid ${to}`, tool_call_id: id, artifact: { receipt: "r1" } }),
      "t-msg",
    )
    expect(runs()).toBe(1)
    expect(replay.map((m) => m.content)).toEqual(["paid acct_1"])
    expect(replay[0]?.artifact).toEqual({ receipt: "r1" })
  })

  it("plain results replay as stored", async () => {
    const { replay } = await runAndReplay((to) => ({ paid: to, lc: 2 }), "t-plain")
    expect(replay.map((m) => m.content)).toEqual(['{"paid":"acct_1","lc":2}'])
  })

  it("a stored Command keeps goto (Send included), resume and graph", async () => {
    const live = new Command({ goto: [new Send("audit", { id: 1 })], resume: "ok", graph: Command.PARENT })
    // Command.toJSON() leaves graph out; what the guard stores keeps it.
    expect(JSON.parse(JSON.stringify(live)).graph).toBeUndefined()
    const revived = await reviveReplayed(JSON.parse(JSON.stringify(storableResult(live))))
    expect(revived).toBeInstanceOf(Command)
    const cmd = revived as Command
    expect(cmd.goto).toEqual([new Send("audit", { id: 1 })])
    expect((cmd.goto as unknown[])[0]).toBeInstanceOf(Send)
    expect(cmd.resume).toBe("ok")
    expect(cmd.graph).toBe(Command.PARENT)
  })

  it("JSON that only looks like a Command or a message is left alone", async () => {
    for (const v of [
      "Command",
      null,
      [{ lg_name: "Command" }],
      { lc: 1, type: "secret", id: ["X"] },
      { lc: 1 },
    ]) {
      expect(await reviveReplayed(v)).toEqual(v)
    }
  })

  it("a handoff tool (Command to the parent graph) replayed from its checkpoint still hands off", async () => {
    let runs = 0
    const handoff = tool(
      async (_args, config) => {
        runs++
        const done = new ToolMessage({
          content: "handed to billing",
          tool_call_id: config.toolCall?.id ?? "",
        })
        return new Command({ goto: "billing", graph: Command.PARENT, update: { messages: [done] } })
      },
      { name: "to_billing", description: "hand off", schema: z.object({}) },
    )
    const tools = guardTools(newLedger(), [handoff], { to_billing: { binding: keyed } })
    const inner = scriptedGraph(tools, [{ id: "call_handoff", name: "to_billing", args: {} }])
    const visits: string[] = []
    const parent = new StateGraph(MessagesAnnotation)
      .addNode("triage", inner, { ends: ["billing"] })
      .addNode("billing", () => {
        visits.push("billing")
        return { messages: [new AIMessage("billing here")] }
      })
      .addEdge(START, "triage")
      .addEdge("billing", END)
      .compile({ checkpointer: new MemorySaver() })
    const config = { configurable: { thread_id: "t-handoff" } }
    await parent.invoke({ messages: [{ role: "user", content: "refund" }] }, config)
    expect(visits).toEqual(["billing"])
    // Replay the parent from the checkpoint before triage: the guarded tool returns its stored Command.
    let before: string | undefined
    for await (const snap of parent.getStateHistory(config))
      if (snap.next.includes("triage")) before = snap.config.configurable?.checkpoint_id
    await parent.invoke(null, { configurable: { thread_id: "t-handoff", checkpoint_id: before } })
    expect(runs).toBe(1)
    expect(visits).toEqual(["billing", "billing"])
  })

  it("the first run returns the tool's own Command (a Date stays a Date); the replay gets the stored form", async () => {
    const when = new Date("2026-12-04T00:00:00Z")
    const pay = tool(async () => new Command({ update: { paidAt: when } }), {
      name: "pay",
      description: "pay",
      schema: z.object({ to: z.string() }),
    })
    const [guarded] = guardTools(newLedger(), [pay], { pay: { binding: keyed } })
    const call = { id: "call_date", name: "pay", args: { to: "acct_1" }, type: "tool_call" as const }
    const config = { configurable: { thread_id: "t-date" } }
    const first = (await guarded?.invoke(call, config)) as unknown as Command
    expect(first).toBeInstanceOf(Command)
    expect((first.update as { paidAt: unknown }).paidAt).toBe(when)
    const replay = (await guarded?.invoke(call, config)) as unknown as Command
    expect(replay).toBeInstanceOf(Command)
    expect((replay.update as { paidAt: unknown }).paidAt).toBe("2026-12-04T00:00:00.000Z")
  })
})
