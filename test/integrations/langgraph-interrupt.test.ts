// interrupt() inside a guarded tool, in a real StateGraph with MemorySaver: the human-approval pattern. interrupt()
// throws to pause the graph and the resume runs the tool again from its start, so a pause before the side effect
// must let the resume run it once, and a pause inside the side effect must never let it run twice.
import { tool } from "@langchain/core/tools"
import { Command, interrupt, MemorySaver } from "@langchain/langgraph"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { type BoundaryMode, guardTools, transitionOf } from "../../src/integrations/langgraph.ts"
import { newLedger, scriptedGraph, toolMessages } from "./scripted/langgraph.ts"

const payment = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const schema = z.object({ to: z.string() })

/** `effect` is the side-effect boundary (sideEffect() with boundary manual); `pay` pays inside it. */
type Body = (to: string, pay: () => Promise<string>, effect: Effect) => Promise<string>
type Effect = <T>(fn: () => Promise<T>) => Promise<T>

/** A payment tool whose body decides where interrupt() sits; `paid` counts the payments made. */
function approvalGraph(thread: string, boundary: BoundaryMode, body: Body) {
  const paid: string[] = []
  const ledger = newLedger()
  const pay = tool(
    async ({ to }, config) => {
      // Boundary "whole" already runs the body inside the side effect.
      const effect: Effect = (fn) => (boundary === "manual" ? transitionOf(config).sideEffect(fn) : fn())
      const payNow = () =>
        effect(async () => {
          paid.push(to)
          return `paid ${to}`
        })
      return body(to, payNow, effect)
    },
    { name: "pay", description: "pay", schema },
  )
  const graph = scriptedGraph(guardTools(ledger, [pay], { pay: { binding: payment, boundary } }), [
    { id: `call_${thread}`, name: "pay", args: { to: "acct_9" } },
  ])
  const config = { configurable: { thread_id: thread } }
  const start = () => graph.invoke({ messages: [{ role: "user", content: "pay" }] }, config)
  const resume = (answer: string) => graph.invoke(new Command({ resume: answer }), config)
  const pending = async () =>
    (await graph.getState(config)).tasks.flatMap((t) => t.interrupts.map((i) => i.value))
  // The call's one row (its request id is the transition key, not the tool-call id).
  const row = async () => (await ledger.listTransitions())[0]
  return { ledger, paid, start, resume, pending, row }
}

const askFirst: Body = async (to, pay) => {
  const answer = interrupt({ question: `pay ${to}?` })
  return answer === "yes" ? pay() : "not approved"
}

describe("LangGraph interrupt() in a guarded tool", () => {
  it("boundary manual, interrupt() before sideEffect(): a non_idempotent payment waits, then runs once on resume", async () => {
    const g = approvalGraph("t-ask", "manual", askFirst)
    await g.start()
    expect(await g.pending()).toEqual([{ question: "pay acct_9?" }])
    expect(g.paid).toEqual([])
    const resumed = await g.resume("yes")
    expect(toolMessages(resumed).map((m) => m.content)).toEqual(["paid acct_9"])
    expect(g.paid).toEqual(["acct_9"])
    // The pause is on the record: released as not executed, by whom and why, then claimed again and completed.
    expect(await g.ledger.listTransitions()).toHaveLength(1)
    expect(await g.row()).toMatchObject({
      terminalOutcome: "COMPLETED",
      resolvedBy: "langgraph interrupt()",
      releasedFromOutcome: "FAILED_BEFORE_EFFECT",
      // 1 the first attempt, 2 its release (a release moves the fence), 3 the resume.
      fence: 3,
    })
    // Resuming again (a duplicate resume, a replay) returns the recorded payment and pays nothing.
    await g.resume("yes")
    expect(g.paid).toEqual(["acct_9"])
  })

  it("a refusal is recorded as the call's result, and no later resume pays", async () => {
    const g = approvalGraph("t-no", "manual", askFirst)
    await g.start()
    const refused = await g.resume("no")
    expect(toolMessages(refused).map((m) => m.content)).toEqual(["not approved"])
    await g.resume("yes")
    expect(g.paid).toEqual([])
    expect((await g.row())?.result).toBe("not approved")
  })

  it("two questions in a row: each pause is released, and the payment runs once after the last answer", async () => {
    const g = approvalGraph("t-two", "manual", async (to, pay) => {
      const amount = interrupt({ question: "amount?" })
      const ok = interrupt({ question: `pay ${String(amount)} to ${to}?` })
      return ok === "yes" ? pay() : "not approved"
    })
    await g.start()
    await g.resume("10")
    expect(await g.pending()).toEqual([{ question: "pay 10 to acct_9?" }])
    expect(g.paid).toEqual([])
    await g.resume("yes")
    expect(g.paid).toEqual(["acct_9"])
    // Three attempts and two releases, each moving the fence.
    expect((await g.row())?.fence).toBe(5)
  })

  // A resume could only hard-block (UNKNOWN), after a human had answered: the interrupt fails the call at once,
  // naming the fix, and the graph does not pause on a question it can never act on.
  it('boundary "whole": interrupt() is inside the side effect, so the call fails now, naming the fix', async () => {
    const g = approvalGraph("t-whole", "whole", askFirst)
    const out = await g.start()
    expect(await g.pending()).toEqual([])
    const [message] = toolMessages(out)
    expect(String(message?.content)).toContain("Tool 'pay' called interrupt() inside its side effect")
    expect(String(message?.content)).toContain("boundary: 'manual'")
    expect((await g.row())?.terminalOutcome).toBe("UNKNOWN")
    expect(g.paid).toEqual([])
  })

  it("interrupt() after the payment: the call fails at once, FAILED_AFTER_EFFECT, and nothing pays twice", async () => {
    const g = approvalGraph("t-late", "manual", async (to, pay) => {
      const receipt = await pay()
      const note = interrupt({ question: `note for ${to}?` })
      return `${receipt}: ${String(note)}`
    })
    const out = await g.start()
    expect(String(toolMessages(out)[0]?.content)).toContain("recorded as FAILED_AFTER_EFFECT")
    expect(await g.pending()).toEqual([])
    expect(g.paid).toEqual(["acct_9"])
    expect((await g.row())?.resolvedBy).toBeNull()
  })

  it("interrupt() inside sideEffect(), before the payment: UNKNOWN, and the error says so", async () => {
    const g = approvalGraph("t-inside", "manual", async (to, _pay, effect) =>
      effect(async () => {
        const ok = interrupt({ question: `pay ${to}?` })
        return ok === "yes" ? `paid ${to}` : "not approved"
      }),
    )
    const out = await g.start()
    expect(String(toolMessages(out)[0]?.content)).toContain("recorded as UNKNOWN")
    expect((await g.row())?.resolvedBy).toBeNull()
  })

  it("with handleToolErrors: false the graph run fails with the GuardedToolError, the interrupt as its cause", async () => {
    const pay = tool(async ({ to }) => `paid ${to}: ${String(interrupt({ question: to }))}`, {
      name: "pay",
      description: "pay",
      schema,
    })
    const tools = guardTools(newLedger(), [pay], { pay: { binding: payment } })
    const calls = [{ id: "call_strict", name: "pay", args: { to: "acct_9" } }]
    const graph = scriptedGraph(tools, calls, new MemorySaver(), false)
    const err = await graph
      .invoke({ messages: [{ role: "user", content: "pay" }] }, { configurable: { thread_id: "t-strict" } })
      .catch((e: unknown) => e)
    expect(err).toMatchObject({ name: "GuardedToolError", code: "interrupt_inside_side_effect" })
    expect((err as Error).cause).toMatchObject({ name: "GraphInterrupt" })
  })

  it("a read tool may interrupt: nothing is recorded as an effect and the resume runs it", async () => {
    const ledger = newLedger()
    let runs = 0
    const lookup = tool(
      async ({ to }) => {
        runs++
        return `balance of ${to}: ${String(interrupt({ question: "which account?" }))}`
      },
      { name: "lookup", description: "lookup", schema },
    )
    const graph = scriptedGraph(
      guardTools(ledger, [lookup], { lookup: { binding: { ...payment, sideEffectClass: "read" } } }),
      [{ id: "call_read", name: "lookup", args: { to: "acct_9" } }],
    )
    const config = { configurable: { thread_id: "t-read" } }
    await graph.invoke({ messages: [{ role: "user", content: "look" }] }, config)
    const out = await graph.invoke(new Command({ resume: "savings" }), config)
    expect(toolMessages(out).map((m) => m.content)).toEqual(["balance of acct_9: savings"])
    expect(runs).toBe(2)
  })
})
