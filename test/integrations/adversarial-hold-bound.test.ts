// Adversarial review of the held retry's bound (failed-calls.ts): a conversation holding 1,000 failed calls that
// may have taken effect takes no new call. Attacked through the frameworks' own loops: parallel calls in one step
// (the AI SDK and LangGraph's ToolNode run them side by side), an operator who settles the oldest calls as completed,
// and a call given up on whose body then failed before its effect.
import events from "node:events"
import type { BaseMessage, ToolMessage } from "@langchain/core/messages"
import { tool as lcTool } from "@langchain/core/tools"
import { MemorySaver } from "@langchain/langgraph"
import { generateText, stepCountIs, type ToolExecutionOptions, tool } from "ai"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, type LedgerEntry, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool, guardTools, transitionOf } from "../../src/integrations/ai-sdk.ts"
import { guardTools as guardLangGraphTools } from "../../src/integrations/langgraph.ts"
import { countedSignal } from "../core/counted-signal.ts"
import { type Call, scriptedModel } from "./scripted/ai-sdk.ts"
import { scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const newLedger = () => new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
const ROOM = 1000

/** A gateway that charges, then times out: every call may have taken effect. */
function timingOut() {
  const charges: string[] = []
  const charge = async ({ to, cents }: { to: string; cents: number }): Promise<string> => {
    charges.push(`${to}:${cents}`)
    throw new Error("gateway timed out")
  }
  return { charges, charge }
}
const schema = z.object({ to: z.string(), cents: z.number() })

/** What a refused or failed call told the model: held, full (takes no new call), or failed (it ran). */
const said = (text: string) =>
  text.includes("takes no new call") ? "full" : text.includes("Do not call it again") ? "held" : "failed"
const count = (outcomes: string[]) =>
  Object.fromEntries([...new Set(outcomes)].map((o) => [o, outcomes.filter((x) => x === o).length]))

type Steps = ReadonlyArray<{ content: ReadonlyArray<{ type: string }> }>
/** The outcome of every tool call of each step. */
const stepOutcomes = (steps: Steps) =>
  steps.map((s) =>
    s.content
      .filter((p) => p.type === "tool-error")
      .map((p) => said(String((p as unknown as { error: { message?: string } }).error.message))),
  )

describe("held retry bound: parallel calls in one step", () => {
  it("AI SDK: one conversation's step of 10,000 parallel failing calls runs 1,000 and leaves another conversation's hold in place", async () => {
    const { charges, charge } = timingOut()
    const ledger = newLedger()
    const pay = tool({ description: "pay", inputSchema: schema, execute: charge })
    // A chat server: one ledger, the tool set built per request, the conversation is the request's thread.
    const request = (thread: string, steps: Call[][]) =>
      generateText({
        model: scriptedModel(steps),
        tools: guardTools(ledger, { pay }, { pay: { binding, meta: () => ({ threadId: thread }) } }),
        prompt: "pay",
        stopWhen: stepCountIs(steps.length + 1),
      })
    const victimPays = (id: string) =>
      request("victim", [[{ id, tool: "pay", input: { to: "acct_v", cents: 500 } }]])
    await victimPays("v_1")
    const spray = Array.from({ length: 10_000 }, (_, i) => ({
      id: `h_${i}`,
      tool: "pay",
      input: { to: `acct_${i}`, cents: 1 },
    }))
    const hostile = await request("hostile", [spray])
    const [sprayed = []] = stepOutcomes(hostile.steps)
    // The room's 1,000 ran (and failed); the other 9,000 were refused before their body began.
    expect(count(sprayed)).toEqual({ failed: ROOM, full: 10_000 - ROOM })
    expect(charges.filter((c) => c.endsWith(":1"))).toHaveLength(ROOM)
    // Before, all 10,000 ran: the tool's memory passed 10,000 and the victim's payment was forgotten first.
    const retry = await victimPays("v_2")
    expect(stepOutcomes(retry.steps).flat()).toEqual(["held"])
    expect(charges.filter((c) => c === "acct_v:500")).toHaveLength(1)
  })

  it("LangGraph ToolNode: a thread at 999 whose next step makes 3 parallel calls runs one of them", async () => {
    const { charges, charge } = timingOut()
    const ledger = newLedger()
    const checkpointer = new MemorySaver()
    const pay = lcTool(charge, { name: "pay", description: "pay", schema })
    const request = (calls: Array<{ id: string; to: string }>) =>
      scriptedGraph(
        guardLangGraphTools(ledger, [pay], { pay: { binding } }),
        calls.map(({ id, to }) => ({ id, name: "pay", args: { to, cents: 1 } })),
        checkpointer,
      ).invoke({ messages: [{ role: "user", content: "pay" }] }, { configurable: { thread_id: "t-1" } })
    const told = (state: { messages: BaseMessage[] }, ids: string[]) =>
      toolMessages(state)
        .filter((m: ToolMessage) => ids.includes(m.tool_call_id))
        .map((m) => said(String(m.content)))
    const first = Array.from({ length: ROOM - 1 }, (_, i) => ({ id: `a_${i}`, to: `acct_${i}` }))
    // @langchain/core adds an abort listener per tool call to the step's signal, and Node prints a leak warning past
    // ten: in the application too, from their code (this package adds one per signal). Signals LangGraph makes
    // meanwhile take the raised limit.
    const limit = events.defaultMaxListeners
    events.defaultMaxListeners = 2 * ROOM
    const firstState = await request(first).finally(() => {
      events.defaultMaxListeners = limit
    })
    expect(count(told(firstState, ["a_0", "a_998"]))).toEqual({ failed: 2 })
    const next = ["b_0", "b_1", "b_2"].map((id) => ({ id, to: `acct_${id}` }))
    const state = await request(next)
    // Before, all three ran: a step's calls all passed the check before any of them failed.
    expect(count(told(state, ["b_0", "b_1", "b_2"]))).toEqual({ failed: 1, full: 2 })
    expect(charges).toHaveLength(ROOM)
    // Full, the thread still holds the retry of its first call rather than forgetting it.
    expect(told(await request([{ id: "a_retry", to: "acct_0" }]), ["a_retry"])).toEqual(["held"])
    expect(charges).toHaveLength(ROOM)
  })
})

describe("held retry bound: what makes room", () => {
  /** A guarded `pay` on thread t-1; `execute` is called as the AI SDK calls it. */
  function threadPay(
    ledger: ActionLedger,
    execute: (a: { to: string; cents: number }, o: ToolExecutionOptions) => Promise<string>,
  ) {
    const pay = guardTool(ledger, tool({ description: "pay", inputSchema: schema, execute }), {
      name: "pay",
      binding,
      boundary: "manual",
      meta: () => ({ threadId: "t-1" }),
    })
    return (id: string, to: string, abortSignal?: AbortSignal) =>
      Promise.resolve(
        pay.execute?.(
          { to, cents: 1 },
          { toolCallId: id, messages: [], ...(abortSignal ? { abortSignal } : {}) },
        ),
      ).then(
        (out) => `ok:${String(out)}`,
        (e: Error & { code?: string }) =>
          e.code === "ledger_storage_unavailable" ? "outage" : said(e.message),
      )
  }

  it("a step's parallel calls share one abort listener on its signal (Node warns past ten)", async () => {
    const ledger = newLedger()
    const { charges, charge } = timingOut()
    const call = threadPay(ledger, (a, o) => transitionOf(o).sideEffect(() => charge(a)))
    const s = countedSignal()
    const out = await Promise.all(Array.from({ length: 20 }, (_, i) => call(`p_${i}`, `acct_${i}`, s.signal)))
    expect(out).toEqual(Array(20).fill("failed"))
    expect(charges).toHaveLength(20)
    expect(s.most()).toBe(1)
    // And the last call done takes it off (a signal with a listener is kept alive).
    expect(s.listening()).toBe(0)
  })

  it("an operator who settles the oldest calls as completed and a later one as not executed frees room", async () => {
    const ledger = newLedger()
    const { charges, charge } = timingOut()
    const call = threadPay(ledger, (a, o) => transitionOf(o).sideEffect(() => charge(a)))
    for (let i = 0; i < ROOM; i++) expect(await call(`h_${i}`, `acct_${i}`)).toBe("failed")
    expect(await call("n_1", "acct_n1")).toBe("full")
    // The operator checks the gateway: the 8 oldest charged, the 9th did not.
    const stuck = await ledger.listTransitions({ stuck: true })
    const row = (id: string) => stuck.find((r) => r.kwargs.tool_call_id === id)?.requestId ?? ""
    for (let i = 0; i < 8; i++) {
      await ledger.release(row(`h_${i}`), {
        verified: "completed",
        result: `paid h_${i}`,
        by: "ops",
        reason: "charged",
      })
    }
    await ledger.release(row("h_8"), { verified: "not_executed", by: "ops", reason: "no charge seen" })
    // Before, every call re-read the same 8 oldest (settled, staying) and the conversation stayed full for good.
    const next = [await call("n_2", "acct_n2"), await call("n_3", "acct_n3")]
    expect(next).toEqual(["full", "failed"])
    expect(await call("n_4", "acct_n4")).toBe("full")
    // A retry of a call settled as completed gets its result: the room it takes is what keeps it from charging.
    expect(await call("r_0", "acct_0")).toBe("ok:paid h_0")
    expect(charges.filter((c) => c === "acct_0:1")).toHaveLength(1)
    expect(charges).toHaveLength(ROOM + 1)
  })

  it("a call given up on whose body then failed before its effect does not keep its room", async () => {
    const ledger = newLedger()
    const { charges, charge } = timingOut()
    let release = () => {}
    const call = threadPay(ledger, async (a, o) => {
      if (a.to === "decl_1") {
        // The framework gives up on the call while the gateway still answers; the card is then declined.
        await new Promise<void>((r) => {
          release = r
        })
        throw new Error("card declined")
      }
      return transitionOf(o).sideEffect(() => charge(a))
    })
    const abort = new AbortController()
    const declined = call("d_1", "decl_1", abort.signal)
    await new Promise((r) => setTimeout(r, 20))
    abort.abort()
    release()
    expect(await declined).toBe("failed")
    for (let i = 0; i < ROOM - 1; i++) expect(await call(`h_${i}`, `acct_${i}`)).toBe("failed")
    // Before, the declined call stayed as one still running, which a full conversation never re-reads: 1,000.
    expect(await call("n_1", "acct_n1")).toBe("failed")
    expect(await call("n_2", "acct_n2")).toBe("full")
    expect(charges).toHaveLength(ROOM)
  })

  it("a store outage while a full conversation re-reads: a typed error, nothing runs, and no room is lost", async () => {
    let down = false
    const storage = new (class extends MemoryLedgerStorage {
      override async get(requestId: string): Promise<LedgerEntry | null> {
        if (down) throw new Error("connection reset")
        return super.get(requestId)
      }
    })()
    const ledger = new ActionLedger({ storage, onWarning: () => {} })
    const { charges, charge } = timingOut()
    const call = threadPay(ledger, (a, o) => transitionOf(o).sideEffect(() => charge(a)))
    for (let i = 0; i < ROOM; i++) expect(await call(`h_${i}`, `acct_${i}`)).toBe("failed")
    down = true
    expect([await call("n_1", "acct_n1"), await call("n_2", "acct_n2")]).toEqual(["outage", "outage"])
    down = false
    const oldest = (await ledger.listTransitions({ stuck: true })).find(
      (r) => r.kwargs.tool_call_id === "h_0",
    )
    await ledger.release(oldest?.requestId ?? "", {
      verified: "not_executed",
      by: "ops",
      reason: "no charge",
    })
    // Confirms a held property: the refused calls were not counted as running, so the one free place is there.
    expect([await call("n_3", "acct_n3"), await call("n_4", "acct_n4")]).toEqual(["failed", "full"])
    expect(charges).toHaveLength(ROOM + 1)
  })
})
