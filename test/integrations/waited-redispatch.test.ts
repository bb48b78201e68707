// A redispatch of a call still running elsewhere (a resubmitted chat request, a checkpoint replay, a resumed run)
// waits for it, and may give up first: its poll timeout ends, or its run is aborted. The framework then tells the
// model this call failed, and the model calls again under a new id with the same arguments. That retry must not run
// the payment beside the one still running: it waits for it and answers its result. Likewise a redispatch that
// finds the call ambiguous (hard-blocked) holds the model's retry, in another process too.
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { tool as lcTool } from "@langchain/core/tools"
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt"
import { generateText, stepCountIs, type Tool, type ToolExecutionOptions, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import {
  ActionLedger,
  type LedgerEntry,
  type LedgerStorage,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { guardTool } from "../../src/integrations/ai-sdk.ts"
import { guardTool as guardLangGraphTool } from "../../src/integrations/langgraph.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"
import { checkpointBeforeTools, type Graph } from "./scripted/langgraph.ts"
import { ScriptedModel } from "./scripted/openai-agents.ts"
import {
  agentsPay,
  aiSdkPayTool,
  args,
  binding,
  type Charge,
  runPayer,
  sleep,
  slowGateway,
} from "./scripted/payments.ts"

const newLedger = (storage: LedgerStorage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.01, onWarning: () => {} })

/** The AI SDK `pay` tool on thread t-1, whose redispatch gives up polling after `pollTimeout` seconds. */
function aiSdkPay(ledger: ActionLedger, charge: Charge, pollTimeout = 0.1) {
  const pay = aiSdkPayTool(ledger, charge, pollTimeout)
  return (ids: string[], abortSignal?: AbortSignal) =>
    generateText({
      model: scriptedModel(ids.map((id) => [{ id, tool: "pay", input: args }])),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(ids.length + 1),
      ...(abortSignal ? { abortSignal } : {}),
    })
}

/** Asks for `subagent_task`; told its call failed, asks again under a new id with the same arguments. */
class RetryingModel extends BaseChatModel {
  _llmType(): string {
    return "scripted"
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const last = messages.at(-1)
    const call = (id: string) =>
      new AIMessage({ content: "", tool_calls: [{ id, name: "subagent_task", args: { task: "m" } }] })
    const message =
      last instanceof ToolMessage
        ? last.status === "error"
          ? call(`retry_${messages.length}`)
          : new AIMessage("done")
        : call("call_1")
    return { generations: [{ text: "", message }] }
  }
}

/** Calls a guarded AI SDK tool's execute directly, as one step would; a thrown error becomes `error <code>`. */
const execute = (pay: Tool, toolCallId: string, input: unknown) =>
  (pay.execute as (i: unknown, o: ToolExecutionOptions) => Promise<unknown>)(input, {
    toolCallId,
    messages: [],
  }).catch((e: { code?: string }) => `error ${e.code}`)

/** A scripted OpenAI Agents model that calls `pay` once per turn under the given call ids. */
const agentsModel = (ids: string[]) => new ScriptedModel(ids.map((callId) => [{ callId, name: "pay", args }]))

type Steps = ReadonlyArray<{ content: ReadonlyArray<{ type: string }> }>
/** Each tool outcome of a run: the call id with its output, or with its error's code. */
const outcomes = (steps: Steps) =>
  steps
    .flatMap((s) => s.content)
    .filter((p) => p.type === "tool-result" || p.type === "tool-error")
    .map((p) => {
      const part = p as unknown as { toolCallId: string; output?: unknown; error?: { code?: string } }
      return [part.toolCallId, p.type === "tool-result" ? part.output : part.error?.code]
    })

describe("a redispatch that stops waiting for the call still running: the model's retry", () => {
  it("AI SDK, poll timeout: the retry waits for the first call and answers its result; one charge", async () => {
    // The first charge outlasts the redispatch's 0.1 s poll timeout many times over, however loaded the machine.
    const { charges, charge, begun } = slowGateway(1_500)
    const run = aiSdkPay(newLedger(), charge)
    const first = run(["c1"])
    while (begun() === 0) await sleep(5)
    // The same conversation again: c1 redispatched (it times out waiting), then the model's retry c2.
    const second = await run(["c1", "c2"])
    await first
    expect(outcomes(second.steps)).toEqual([
      ["c1", "ledger_poll_timeout"],
      ["c2", "paid 500 to acct_1"],
    ])
    expect(charges).toEqual(["acct_1:500"])
  })

  it("AI SDK, the redispatch's run aborted while it waited: a later retry answers the first call's result", async () => {
    const { charges, charge, begun } = slowGateway(1_500)
    const run = aiSdkPay(newLedger(), charge, 60)
    const first = run(["c1"])
    while (begun() === 0) await sleep(5)
    const abort = new AbortController()
    const redispatch = run(["c1"], abort.signal)
    await sleep(50)
    abort.abort(new Error("the user closed the tab"))
    await expect(redispatch).rejects.toThrow()
    // The user asks again before the first call ended: the model calls again under a new id.
    const retry = await run(["c2"])
    await first
    expect(outcomes(retry.steps)).toEqual([["c2", "paid 500 to acct_1"]])
    expect(charges).toEqual(["acct_1:500"])
  })

  it("AI SDK, two processes on one store: a hard-blocked redispatch holds the model's retry there too", async () => {
    const storage = new MemoryLedgerStorage()
    // Process A: the gateway charged, then the connection reset; the row is ambiguous.
    const a = slowGateway(10, () => "after")
    await aiSdkPay(newLedger(storage), a.charge)(["c1"])
    // Process B (its own ledger object and retry memory): the conversation is redispatched there.
    const b = slowGateway(10)
    const second = await aiSdkPay(newLedger(storage), b.charge)(["c1", "c2"])
    expect(outcomes(second.steps)).toEqual([
      ["c1", "ledger_hard_block"],
      ["c2", "ledger_hard_block"],
    ])
    expect([...a.charges, ...b.charges]).toEqual(["acct_1:500"])
  })

  it("a call that was never claimed (a policy denial) holds nothing: the retry runs", async () => {
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      onWarning: () => {},
      predicates: [
        {
          name: "first_denied",
          check: (() => {
            let n = 0
            return () => n++ > 0
          })(),
        },
      ],
    })
    const { charges, charge } = slowGateway(1)
    const second = await aiSdkPay(ledger, charge)(["c1", "c2"])
    expect(outcomes(second.steps)).toEqual([
      ["c1", "ledger_hard_block"],
      ["c2", "paid 500 to acct_1"],
    ])
    expect(charges).toEqual(["acct_1:500"])
  })

  it("OpenAI Agents, poll timeout: the retry waits for the first call and answers its result; one charge", async () => {
    const { charges, charge, begun } = slowGateway(1_500)
    const pay = agentsPay(newLedger(), charge, undefined, {
      pollTimeout: 0.1,
      meta: () => ({ threadId: "conv-1" }),
    })
    const first = runPayer(agentsModel(["call_1"]), pay)
    while (begun() === 0) await sleep(5)
    const second = await runPayer(agentsModel(["call_1", "call_2"]), pay)
    await first
    expect(second).toHaveLength(2)
    expect(second[0]).toContain("LedgerPollTimeoutError")
    expect(second[1]).toContain("paid 500 to acct_1")
    expect(charges).toEqual(["acct_1:500"])
  })

  it("LangGraph, a checkpoint replay that times out waiting: the model's retry runs nothing", async () => {
    let executions = 0
    const task = guardLangGraphTool(
      newLedger(),
      lcTool(
        async ({ task }: { task: string }) => {
          executions++
          await sleep(1_500)
          return `report for ${task}`
        },
        { name: "subagent_task", description: "d", schema: z.object({ task: z.string() }) },
      ),
      { binding, pollTimeout: 0.1 },
    )
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => ({ messages: [await new RetryingModel({}).invoke(state.messages)] }))
      .addNode("tools", new ToolNode([task]))
      .addEdge(START, "agent")
      .addConditionalEdges("agent", toolsCondition, ["tools", END])
      .addEdge("tools", "agent")
      .compile({ checkpointer: new MemorySaver() })
    const first = graph.invoke(
      { messages: [{ role: "user", content: "research" }] },
      { configurable: { thread_id: "t" } },
    )
    while (executions === 0) await sleep(5)
    const checkpoint = await checkpointBeforeTools(graph as unknown as Graph, "t")
    const replay = await graph.invoke(null, { configurable: { thread_id: "t", checkpoint_id: checkpoint } })
    await first
    const results = replay.messages.filter((m): m is ToolMessage => m instanceof ToolMessage)
    expect(results.map((m) => [m.status ?? "success", String(m.content).includes("report for m")])).toEqual([
      ["error", false],
      ["success", true],
    ])
    expect(executions).toBe(1)
  })

  it("OpenAI Agents timeoutMs while the redispatch waits: a retry made at once is held too", async () => {
    // Two processes on one networked store (50 ms a read). The SDK answers the model "timed out" as soon as
    // timeoutMs fires (it races the call), before the waiting call unwinds through its store reads: the memory must
    // hold the retry from that moment.
    class NetworkedStore extends MemoryLedgerStorage {
      override async get(id: string) {
        await sleep(50)
        return super.get(id)
      }
      override async tryClaimInflight(...a: Parameters<MemoryLedgerStorage["tryClaimInflight"]>) {
        await sleep(50)
        return super.tryClaimInflight(...a)
      }
    }
    const storage = new NetworkedStore()
    const { charges, charge, begun } = slowGateway(2_000)
    const conversation = { meta: () => ({ threadId: "conv-1" }) }
    const first = runPayer(
      agentsModel(["call_1"]),
      agentsPay(newLedger(storage), charge, undefined, conversation),
    )
    while (begun() === 0) await sleep(5)
    const second = await runPayer(
      agentsModel(["call_1", "call_2"]),
      agentsPay(newLedger(storage), charge, 300, conversation),
    )
    await first
    // A retry that ran would charge 2 s after it began, beside the first call's charge.
    await sleep(2_100)
    expect(second[0]).toContain("timed out")
    expect(charges).toEqual(["acct_1:500"])
  })

  it.each(["soft", "hard"] as const)(
    "a call refused for args drift (onArgsDrift %s) holds nothing: its retry is refused again, not given the other call's result",
    async (onArgsDrift) => {
      const ledger = new ActionLedger({
        storage: new MemoryLedgerStorage(),
        onArgsDrift,
        onWarning: () => {},
      })
      const charges: string[] = []
      const pay = guardTool(
        ledger,
        tool({
          description: "pay",
          inputSchema: z.object({ order_id: z.string(), cents: z.number() }),
          execute: async ({ order_id, cents }) => {
            charges.push(`${order_id}:${cents}`)
            return `paid ${cents} for ${order_id}`
          },
        }),
        {
          name: "pay",
          binding: { ...binding, requestIdFrom: "order_id" },
          meta: () => ({ threadId: "t-1" }),
        },
      )
      const exec = (toolCallId: string, cents: number) => execute(pay, toolCallId, { order_id: "o1", cents })
      const code = onArgsDrift === "soft" ? "error args_drift" : "error ledger_hard_block"
      // c2 has other arguments under c1's business key; c3 is the model's retry of c2.
      expect([await exec("c1", 500), await exec("c2", 700), await exec("c3", 700)]).toEqual([
        "paid 500 for o1",
        code,
        code,
      ])
      expect(charges).toEqual(["o1:500"])
    },
  )

  it("a redispatch of a call completed without its result stored: the retry is told so too, and runs nothing", async () => {
    const storage = new MemoryLedgerStorage()
    const ledger = newLedger(storage)
    const { charges, charge } = slowGateway(1)
    const pay = aiSdkPayTool(ledger, charge)
    const exec = (toolCallId: string) => execute(pay, toolCallId, args)
    expect(await exec("c1")).toBe("paid 500 to acct_1")
    // As another process's ledger records a result it could not store.
    const [row] = await ledger.listTransitions()
    await storage.set({
      ...(row as LedgerEntry),
      result: null,
      error: "LedgerResultUnstorableError: [max_bytes] over",
    })
    expect([await exec("c1"), await exec("c2")]).toEqual([
      "error ledger_result_unstorable",
      "error ledger_result_unstorable",
    ])
    expect(charges).toEqual(["acct_1:500"])
  })
})
