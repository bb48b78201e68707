// The LangGraph integration in a real StateGraph (agent node → ToolNode, MemorySaver checkpoints) with a
// scripted chat model built on LangChain's BaseChatModel (test/integrations/scripted/langgraph.ts).
import { type StructuredToolInterface, tool } from "@langchain/core/tools"
import { MemorySaver } from "@langchain/langgraph"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { UpstashLedgerStorage } from "../../src/adapters/upstash.ts"
import { ActionLedger } from "../../src/core/index.ts"
import { guardTool, guardTools, langGraphCallMeta, transitionOf } from "../../src/integrations/langgraph.ts"
import { requireUpstash, runTag, upstashClient } from "../adapters/servers/env.ts"
import { checkpointBeforeTools, newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const subagent = {
  agentId: "research",
  policyVersion: "1",
  sideEffectClass: "non_idempotent_mutate" as const,
}

/** langgraph#7417's model: it calls `subagent_task` under one fixed tool-call id until a tool result is in. */
const CALL_7417 = [{ id: "call_7417", name: "subagent_task", args: { task: "analyze_market" } }]
const buildGraph = (tools: StructuredToolInterface[], checkpointer?: MemorySaver) =>
  scriptedGraph(tools, CALL_7417, checkpointer)

describe("LangGraph integration", () => {
  it("langgraph#7417: a tool call replayed from its checkpoint runs once; thread, node and call id reach the ledger", async () => {
    let executions = 0
    const ledger = newLedger()
    const task = tool(
      async ({ task }) => {
        executions++
        return `report for ${task} #${executions}`
      },
      { name: "subagent_task", description: "run a sub-agent", schema: z.object({ task: z.string() }) },
    )
    const graph = buildGraph(guardTools(ledger, [task], { subagent_task: { binding: subagent } }))
    const config = { configurable: { thread_id: "thread-7417" } }

    const first = await graph.invoke({ messages: [{ role: "user", content: "research" }] }, config)
    expect(toolMessages(first).map((m) => m.content)).toEqual(["report for analyze_market #1"])

    const checkpointId = await checkpointBeforeTools(graph, "thread-7417")
    const replay = await graph.invoke(null, {
      configurable: { thread_id: "thread-7417", checkpoint_id: checkpointId },
    })
    expect(toolMessages(replay).map((m) => m.content)).toEqual(["report for analyze_market #1"])
    expect(executions).toBe(1)

    const rows = await ledger.listTransitions()
    expect(rows).toHaveLength(1)
    expect(rows[0]?.kwargs).toMatchObject({
      tool_call_id: "call_7417",
      thread_id: "thread-7417",
      node: "tools",
    })
  })

  it("langgraph#7417 as reported: a redispatch while the first run is still in its tool waits and gets its result", async () => {
    let executions = 0
    let started!: () => void
    const bodyStarted = new Promise<void>((r) => {
      started = r
    })
    let finish!: () => void
    const held = new Promise<void>((r) => {
      finish = r
    })
    const ledger = newLedger()
    const task = tool(
      async ({ task }) => {
        executions++
        started()
        await held
        return `long report for ${task}`
      },
      { name: "subagent_task", schema: z.object({ task: z.string() }) },
    )
    const graph = buildGraph([guardTool(ledger, task, { binding: subagent })])
    const config = { configurable: { thread_id: "thread-long" } }

    const firstRun = graph.invoke({ messages: [{ role: "user", content: "research" }] }, config)
    await bodyStarted
    const checkpointId = await checkpointBeforeTools(graph, "thread-long")
    const redispatch = graph.invoke(null, {
      configurable: { thread_id: "thread-long", checkpoint_id: checkpointId },
    })
    await new Promise((r) => setTimeout(r, 50))
    expect(executions).toBe(1)
    finish()
    const [a, b] = await Promise.all([firstRun, redispatch])
    expect(toolMessages(a).map((m) => m.content)).toEqual(["long report for analyze_market"])
    expect(toolMessages(b).map((m) => m.content)).toEqual(["long report for analyze_market"])
    expect(executions).toBe(1)
  })

  it("langgraph#7417 across workers: two graph workers on one checkpointer and a Redis ledger run the call once", async () => {
    await requireUpstash()
    const tag = `mycelium-test:${runTag("langgraph")}`
    const prefix = `${tag}:action:`
    const checkpointer = new MemorySaver()
    let executions = 0
    let finish!: () => void
    const held = new Promise<void>((r) => {
      finish = r
    })
    let started!: () => void
    const bodyStarted = new Promise<void>((r) => {
      started = r
    })
    // Each worker has its own ledger (own owner name) and its own Redis client; only the store is shared.
    const worker = () => {
      const ledger = new ActionLedger({
        storage: new UpstashLedgerStorage({ redis: upstashClient(), prefix }),
        pollInterval: 0.02,
        onWarning: () => {},
      })
      const task = tool(
        async ({ task }) => {
          executions++
          started()
          await held
          return `cloud report for ${task}`
        },
        { name: "subagent_task", schema: z.object({ task: z.string() }) },
      )
      return buildGraph([guardTool(ledger, task, { binding: subagent })], checkpointer)
    }
    const [a, b] = [worker(), worker()]
    const first = a.invoke(
      { messages: [{ role: "user", content: "research" }] },
      { configurable: { thread_id: "t-cloud" } },
    )
    await bodyStarted
    const checkpointId = await checkpointBeforeTools(a, "t-cloud")
    const redispatch = b.invoke(null, { configurable: { thread_id: "t-cloud", checkpoint_id: checkpointId } })
    await new Promise((r) => setTimeout(r, 150))
    finish()
    const [ra, rb] = await Promise.all([first, redispatch])
    expect(toolMessages(ra).map((m) => m.content)).toEqual(["cloud report for analyze_market"])
    expect(toolMessages(rb).map((m) => m.content)).toEqual(["cloud report for analyze_market"])
    expect(executions).toBe(1)
    const raw = upstashClient()
    const keys = await raw.keys(`${tag}:*`)
    expect(keys.length).toBeGreaterThan(0)
    await raw.del(...keys)
  })

  it("a crash inside the side effect hard-blocks the replay; after a release exactly one re-run", async () => {
    let executions = 0
    let crash = true
    const ledger = newLedger()
    const task = tool(
      async ({ task }, config) =>
        transitionOf(config).sideEffect(async () => {
          executions++
          if (crash) throw new Error("sub-agent lost mid-run")
          return `report for ${task}`
        }),
      { name: "subagent_task", schema: z.object({ task: z.string() }) },
    )
    const graph = buildGraph([guardTool(ledger, task, { binding: subagent, boundary: "manual" })])
    const thread = { configurable: { thread_id: "thread-crash" } }
    const first = await graph.invoke({ messages: [{ role: "user", content: "research" }] }, thread)
    expect(toolMessages(first)[0]?.status).toBe("error")
    expect(String(toolMessages(first)[0]?.content)).toContain("sub-agent lost mid-run")

    const checkpointId = await checkpointBeforeTools(graph, "thread-crash")
    const replayConfig = { configurable: { thread_id: "thread-crash", checkpoint_id: checkpointId } }
    crash = false
    const blocked = await graph.invoke(null, replayConfig)
    expect(toolMessages(blocked)[0]?.status).toBe("error")
    expect(String(toolMessages(blocked)[0]?.content)).toMatch(/hard|ambiguous|UNKNOWN/i)
    expect(executions).toBe(1)

    const row = (await ledger.listTransitions())[0]!
    expect(row.terminalOutcome).toBe("UNKNOWN")
    await ledger.release(row.requestId, {
      verified: "not_executed",
      by: "ops",
      reason: "sub-agent never started",
    })
    const rerun = await graph.invoke(null, replayConfig)
    expect(toolMessages(rerun).map((m) => m.content)).toEqual(["report for analyze_market"])
    const again = await graph.invoke(null, replayConfig)
    expect(toolMessages(again).map((m) => m.content)).toEqual(["report for analyze_market"])
    expect(executions).toBe(2)
  })

  it("maps the LangGraph config to call metadata, never LangChain's per-invocation runId", () => {
    const meta = langGraphCallMeta({
      runId: "random-per-invocation",
      toolCall: { id: "call_1", name: "t", args: {} },
      configurable: { thread_id: "t1", run_id: "run-9" },
      metadata: { langgraph_node: "tools" },
    })
    expect(meta).toEqual({ toolCallId: "call_1", threadId: "t1", runId: "run-9", node: "tools" })
    expect(langGraphCallMeta({ runId: "x", metadata: { run_id: "platform-run" } })).toEqual({
      runId: "platform-run",
    })
    expect(langGraphCallMeta({ runId: "random-per-invocation" })).toEqual({})
  })

  it("a tool invoked outside a graph with a tool call is guarded too, and its schema still applies", async () => {
    let executions = 0
    const ledger = newLedger()
    const add = guardTool(
      ledger,
      tool(
        async ({ a, b }) => {
          executions++
          return a + b
        },
        { name: "add", schema: z.object({ a: z.number(), b: z.number() }) },
      ),
      { binding: { ...subagent, sideEffectClass: "read" } },
    )
    const call = { id: "c1", name: "add", args: { a: 2, b: 3 }, type: "tool_call" as const }
    const m1 = await add.invoke(call)
    const m2 = await add.invoke(call)
    expect([m1.content, m2.content]).toEqual(["5", "5"])
    expect(executions).toBe(1)
    await expect(
      add.invoke({ id: "c2", name: "add", args: { a: "x", b: 3 }, type: "tool_call" }),
    ).rejects.toThrow(/did not match/)
    expect(executions).toBe(1)
  })
})
