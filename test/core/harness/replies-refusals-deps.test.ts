// Five harness holes, each reproduced here first. A reply whose getter throws let a waiting
// sibling send after the run failed; a call refused by argument validation spent tool_calls_limit; deps.tools of the
// wrong kind failed a task with a bare TypeError after run_started; fromAiSdk ran a provider-executed tool call as
// the host's; and planningFailed / rlmQueryTool / rlmParallelTool threw a TypeError on a null argument.
import { describe, expect, it } from "vitest"
import {
  type AiSdkLanguageModel,
  fromAiSdk,
  type HarnessTool,
  type ModelClient,
  type ModelRequest,
  planningFailed,
  RunFailed,
  type RunResult,
  rlmParallelTool,
  rlmQueryTool,
  runPlan,
  ScriptedModel,
} from "../../../src/core/harness/index.ts"
import { ActionLedger, InvalidOptionError, MemoryLedgerStorage } from "../../../src/core/index.ts"
import { ManualClock } from "../../../src/testing.ts"
import { bounded } from "../../../src/tools.ts"
import { recorder, task } from "./helpers.ts"

const one = { tasks: [task("t")], output_task_id: "t" }
const settled = (p: Promise<RunResult>) => p.catch((e: RunFailed) => e.result)
const thrown = (f: () => unknown): unknown => {
  try {
    f()
  } catch (e) {
    return e
  }
  return undefined
}

/** A `refund` tool guarded by bounded(): an amount that is not an integer is refused before its body runs. */
function refundTool(ran: number[]): HarnessTool {
  const guarded = bounded(
    async (args: { amount: number }) => {
      ran.push(args.amount)
      return { ok: true }
    },
    { name: "refund", schema: { amount: { type: "integer" } } },
  )
  return {
    name: "refund",
    parameters: { type: "object" },
    execute: (args) => guarded(args as { amount: number }),
  }
}
const refusedThenRefund = [
  { tool_calls: [{ name: "refund", args: { amount: "lots" } }] }, // refused before execution
  { tool_calls: [{ name: "refund", args: { amount: 50 } }] }, // the one call that executes
  { text: "refunded 50" },
]

describe("a reply read once, inside the request's try", () => {
  // docs/harness.md (Fail fast): a failure stops the run "before a request permit it frees can reach a waiting
  // sibling". A throwing usage getter was read after the try: the permit went to b before the failure was recorded,
  // and the request had no sample and no model_request_finished event.
  it("a reply whose usage getter throws fails its task before the freed permit lets a sibling send", async () => {
    const sent: string[] = []
    const { events, onEvent } = recorder()
    let bQueued: () => void = () => {}
    const bStarted = new Promise<void>((r) => {
      bQueued = r
    })
    const model: ModelClient = {
      request: async (req: ModelRequest) => {
        sent.push(req.context.task_id)
        if (req.context.task_id !== "a") return { parts: [{ type: "text", text: "y" }] }
        // b starts (and queues on the only permit) in the same step as its task_started event.
        await bStarted
        return {
          parts: [{ type: "text", text: "x" }],
          usage: {
            get input_tokens(): number {
              throw new Error("bad usage")
            },
          },
        }
      },
    }
    const plan = { tasks: [task("a"), task("b"), task("out", ["a", "b"])], output_task_id: "out" }
    const r = await settled(
      runPlan(
        plan,
        { model, budget: { max_concurrent_requests: 1 } },
        {
          onEvent: (e) => {
            onEvent(e)
            if (e.type === "task_started" && e.task_id === "b") bQueued()
          },
        },
      ),
    )
    expect(r.reason).toBe("task_failed")
    expect(r.failure).toMatchObject({ task_id: "a", message: "bad usage" })
    expect(sent).toEqual(["a"])
    expect(r.model_requests).toHaveLength(r.model_requests_total)
    expect(r.model_requests[0]).toMatchObject({ outcome: "error", input_tokens: null })
    expect(events.filter((e) => e.type === "model_request_finished")).toHaveLength(r.model_requests_total)
  })
})

describe("a tool call its boundary refuses before it executes does not count (harness-behavior §2.6)", () => {
  it("a bounded() tool's input refusal spends no tool_calls_limit", async () => {
    const ran: number[] = []
    const model = new ScriptedModel({ byTask: { t: refusedThenRefund } })
    const r = await settled(
      runPlan(one, { model, tools: [refundTool(ran)], budget: { tool_calls_limit: 1 } }),
    )
    expect(ran).toEqual([50])
    expect(r).toMatchObject({ status: "succeeded", output: "refunded 50", usage: { tool_calls: 1 } })
  })

  it("a refusal under another tool's name (a bounded() helper the tool calls) still counts", async () => {
    const inner = bounded(async (_: { n: number }) => "ok", {
      name: "helper",
      schema: { n: { type: "integer" } },
    })
    const tool: HarnessTool = {
      name: "outer",
      parameters: { type: "object" },
      execute: () => inner({ n: "x" } as never),
    }
    const model = new ScriptedModel({
      byTask: { t: [{ tool_calls: [{ name: "outer", args: {} }] }, { text: "done" }] },
    })
    const r = await runPlan(one, { model, tools: [tool] })
    expect(r.usage.tool_calls).toBe(1)
  })

  it("durable: the refusal is not counted live, nor charged or counted when a resumed run replays it", async () => {
    const storage = new MemoryLedgerStorage()
    const ledgerOf = () =>
      new ActionLedger({ storage, clock: new ManualClock(), leaseTtl: 30, onWarning: () => {} })
    const runId = `run:${"5a".repeat(16)}`
    const ran: number[] = []
    const budget = { tool_calls_limit: 1 }
    // The first run is cancelled at its third request, after both tool calls finished.
    const ac = new AbortController()
    const first: ModelClient = {
      request: (req, signal) => {
        const step = req.context.step
        const amount = step === 0 ? "lots" : 50
        if (step < 2)
          return Promise.resolve({
            parts: [{ type: "tool_call", id: "c", name: "refund", args: { amount } }],
          })
        ac.abort()
        return Promise.reject(signal.reason)
      },
    }
    const crashed = await settled(
      runPlan(
        one,
        { model: first, ledger: ledgerOf(), tools: [refundTool(ran)], budget },
        { run_id: runId, signal: ac.signal },
      ),
    )
    expect(crashed).toMatchObject({ status: "stopped", usage: { tool_calls: 1 } })
    const resumed: ModelClient = {
      request: async (req) => {
        if (req.context.step < 2) throw new Error("a finished request was sent again")
        return { parts: [{ type: "text", text: "refunded 50" }] }
      },
    }
    const r = await settled(
      runPlan(
        one,
        { model: resumed, ledger: ledgerOf(), tools: [refundTool(ran)], budget },
        { run_id: runId },
      ),
    )
    expect(ran).toEqual([50])
    expect(r).toMatchObject({ status: "succeeded", output: "refunded 50", usage: { tool_calls: 1 } })
  })
})

describe("deps of the wrong kind are refused before any event", () => {
  const refusedBeforeEvents = (deps: Record<string, unknown>) => {
    const { events, onEvent } = recorder()
    let p: Promise<unknown> | undefined
    const e = thrown(() => {
      p = runPlan(one, { model: new ScriptedModel(), ...deps } as never, { onEvent })
    })
    p?.catch(() => {})
    expect(e).toBeInstanceOf(InvalidOptionError)
    expect(events).toEqual([])
  }
  const tool = (name: unknown): unknown => ({ name, parameters: {}, execute: () => "ok" })

  it("tools that are neither a list nor a function: an InvalidOptionError, not a TypeError after task_started", () => {
    refusedBeforeEvents({ tools: { cmd_run: {} } })
  })

  it("a tool without a string name or an execute function, and two tools of one name", () => {
    refusedBeforeEvents({ tools: [tool(5)] })
    refusedBeforeEvents({ tools: [{ name: "x", parameters: {} }] })
    refusedBeforeEvents({ tools: [null] })
    refusedBeforeEvents({ tools: [tool("x"), tool("x")] })
  })

  it("instructions that are neither a string nor a function", () => {
    refusedBeforeEvents({ instructions: 42 })
  })

  it("a tools function's wrong answer fails its task with InvalidOptionError; null deps fields are unset", async () => {
    const err = await runPlan(one, { model: new ScriptedModel(), tools: () => ({}) as never }).catch((e) => e)
    expect(err).toBeInstanceOf(RunFailed)
    expect((err as RunFailed).result.failure).toMatchObject({
      task_id: "t",
      error_type: "InvalidOptionError",
    })
    const r = await runPlan(one, {
      model: new ScriptedModel(),
      tools: null as never,
      instructions: null as never,
    })
    expect(r.status).toBe("succeeded")
  })
})

describe("fromAiSdk and provider-executed tools", () => {
  // OpenAI / Anthropic web search and code execution (`providerExecuted: true`) ran at the provider, and their
  // result is in the same response. Handed on as a call of the host's, the harness answered "Unknown tool", dropped
  // the final text and paid for another request.
  it("a provider-executed tool call is not run as a client tool; the response's text answers", async () => {
    let calls = 0
    const model: AiSdkLanguageModel = {
      specificationVersion: "v2",
      provider: "openai.responses",
      modelId: "gpt-x",
      async doGenerate() {
        calls++
        return {
          content: [
            {
              type: "tool-call",
              toolCallId: "ws_1",
              toolName: "web_search",
              input: "{}",
              providerExecuted: true,
            },
            {
              type: "tool-result",
              toolCallId: "ws_1",
              toolName: "web_search",
              result: { hits: 3 },
              providerExecuted: true,
            },
            { type: "text", text: "Oslo: 4°C, rain" },
          ] as never,
          finishReason: "stop",
          usage: { inputTokens: 10, outputTokens: 5 },
        }
      },
    }
    const r = await settled(runPlan(one, { model: fromAiSdk(model), budget: { request_limit: 3 } }))
    expect(r).toMatchObject({ status: "succeeded", output: "Oslo: 4°C, rain", usage: { tool_calls: 0 } })
    expect(calls).toBe(1)
  })
})

describe("the harness helpers' arguments", () => {
  // DESIGN.md: every error of the package extends MyceliumError. Each threw a TypeError on null.
  it("planningFailed refuses a failure that is no object, and options of the wrong kind, with InvalidOptionError", () => {
    expect(thrown(() => planningFailed(null as never))).toBeInstanceOf(InvalidOptionError)
    expect(thrown(() => planningFailed({ error: new Error("x") }, 5 as never))).toBeInstanceOf(
      InvalidOptionError,
    )
    expect(thrown(() => planningFailed({ error: new Error("x") }, { run_id: "" }))).toBeInstanceOf(
      InvalidOptionError,
    )
    expect(thrown(() => planningFailed({ error: new Error("x") }, { run_id: 7 as never }))).toBeInstanceOf(
      InvalidOptionError,
    )
    // Null options are none, as runPlan reads its own.
    expect(planningFailed({ error: new Error("x") }, null).result.reason).toBe("planning_failed")
  })

  it("rlmQueryTool and rlmParallelTool read null options as none and refuse another kind with a typed error", () => {
    expect(rlmQueryTool(null).name).toBe("rlm_query")
    expect(rlmParallelTool(null).name).toBe("rlm_parallel")
    for (const bad of [5, "x", true]) {
      expect(thrown(() => rlmQueryTool(bad as never))).toBeInstanceOf(InvalidOptionError)
      expect(thrown(() => rlmParallelTool(bad as never))).toBeInstanceOf(InvalidOptionError)
    }
  })
})
