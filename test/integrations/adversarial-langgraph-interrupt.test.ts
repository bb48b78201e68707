// Adversarial review of interrupt() in a guarded LangGraph tool: no sequence may let the pause path release a call
// whose effect may have run. Real StateGraph + ToolNode + MemorySaver; real Redis for the shared-store case. Every
// test counts the provider calls the tool made.
import { tool } from "@langchain/core/tools"
import { Command, interrupt } from "@langchain/langgraph"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { RedisLedgerStorage } from "../../src/adapters/redis.ts"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { createLedgerApp } from "../../src/edge/app.ts"
import { RemoteLedger } from "../../src/edge/client.ts"
import { guardTools, type ToolLedger, transitionOf } from "../../src/integrations/langgraph.ts"
import { runTag } from "../adapters/servers/env.ts"
import { scriptedGraph, type ToolCall, toolMessages } from "./scripted/langgraph.ts"

const payment = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const schema = z.object({ to: z.string() })

function graphOf(
  ledger: ToolLedger,
  tools: Parameters<typeof guardTools>[1],
  calls: ToolCall[],
  thread: string,
) {
  const options = Object.fromEntries(
    tools.map((t) => [t.name, { binding: payment, boundary: "manual" as const }]),
  )
  const graph = scriptedGraph(guardTools(ledger, tools, options), calls)
  const config = { configurable: { thread_id: thread } }
  return {
    start: () => graph.invoke({ messages: [{ role: "user", content: "go" }] }, config),
    resume: (resume: unknown) => graph.invoke(new Command({ resume }), config),
    interrupts: async () => (await graph.getState(config)).tasks.flatMap((t) => t.interrupts),
  }
}

/** The approval pattern done right: ask, then pay inside sideEffect() (after `delayMs`); `paid` records each payment. */
function askThenPay(paid: string[], delayMs = 0) {
  return tool(
    async ({ to }, config) => {
      const ok = interrupt({ question: `pay ${to}?` })
      if (ok !== "yes") return "no"
      return transitionOf(config).sideEffect(async () => {
        paid.push(to)
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
        return `paid ${to}`
      })
    },
    { name: "pay", description: "pay", schema },
  )
}

/** The approval pattern done wrong: the provider call happens, its handle is recorded, then the human is asked. */
function intentThenAsk(provider: string[]) {
  return tool(
    async ({ to }, config) => {
      const tx = transitionOf(config)
      provider.push(`create intent for ${to}`)
      await tx.recordExternalOperation(`pi_${provider.length}`)
      const ok = interrupt({ question: `capture for ${to}?` })
      return ok === "yes" ? `captured ${to}` : "cancelled"
    },
    { name: "pay", description: "pay", schema },
  )
}

describe("adversarial: interrupt() in a guarded LangGraph tool", () => {
  it("interrupt() after recordExternalOperation(): the provider was called, so the pause is never released", async () => {
    const provider: string[] = []
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const g = graphOf(
      ledger,
      [intentThenAsk(provider)],
      [{ id: "call_ref", name: "pay", args: { to: "a" } }],
      "t-ref",
    )
    const out = await g.start()
    expect(String(toolMessages(out)[0]?.content)).toContain(
      "interrupt() after recording external operation 'pi_1'",
    )
    expect(await g.interrupts()).toEqual([])
    const [row] = await ledger.listTransitions()
    expect(row?.operatorResolution).toBeNull()
    expect(row?.externalOperationRef).toBe("pi_1")
    // A resume (or any redispatch) must not call the provider a second time.
    await g.resume("yes")
    expect(provider).toEqual(["create intent for a"])
  })

  it("markMaybeCrossed() then interrupt(): UNKNOWN, never released, the body never runs again", async () => {
    let runs = 0
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const pay = tool(
      async ({ to }, config) => {
        runs++
        await transitionOf(config).markMaybeCrossed()
        return `paid ${to}: ${String(interrupt({ question: "sure?" }))}`
      },
      { name: "pay", description: "pay", schema },
    )
    const g = graphOf(ledger, [pay], [{ id: "call_mmc", name: "pay", args: { to: "a" } }], "t-mmc")
    await g.start()
    await g.resume("yes")
    expect(runs).toBe(1)
    expect((await ledger.listTransitions())[0]).toMatchObject({
      terminalOutcome: "UNKNOWN",
      operatorResolution: null,
    })
  })

  it("ToolNode runs a duplicated tool-call id twice in parallel: one payment after the resume", async () => {
    const paid: string[] = []
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      pollInterval: 0.005,
      onWarning: () => {},
    })
    const pay = askThenPay(paid, 20)
    const call = { id: "call_dup", name: "pay", args: { to: "a" } }
    const g = graphOf(ledger, [pay], [call, call], "t-dup")
    await g.start()
    const pending = await g.interrupts()
    expect(pending.length).toBeGreaterThan(0)
    await g.resume(Object.fromEntries(pending.map((i) => [i.id, "yes"])))
    await g.resume(Object.fromEntries(pending.map((i) => [i.id, "yes"])))
    expect(paid).toEqual(["a"])
    expect(await ledger.listTransitions()).toHaveLength(1)
  })

  it("two tools interrupting in one ToolNode step, each answered in turn: each pays once, nothing twice", async () => {
    const paid: string[] = []
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const make = (name: string) =>
      tool(
        async ({ to }, config) => {
          const ok = interrupt({ question: `${name} ${to}?` })
          if (ok !== "yes") return "no"
          return transitionOf(config).sideEffect(async () => {
            paid.push(`${name}:${to}`)
            return `${name} paid ${to}`
          })
        },
        { name, description: name, schema },
      )
    const calls = [
      { id: "call_p1", name: "pay_one", args: { to: "a" } },
      { id: "call_p2", name: "pay_two", args: { to: "b" } },
    ]
    const g = graphOf(ledger, [make("pay_one"), make("pay_two")], calls, "t-two-tools")
    await g.start()
    // ToolNode runs both calls in one task: the first interrupt pauses it, the other is asked on the next resume.
    // Each answer re-runs both tools from their start; a released pause runs its tool once, a paid one replays.
    const asked: unknown[] = []
    for (let round = 0; round < 4; round++) {
      const pending = await g.interrupts()
      if (pending.length === 0) break
      asked.push(...pending.map((i) => i.value))
      await g.resume(Object.fromEntries(pending.map((i) => [i.id, "yes"])))
    }
    expect(asked).toHaveLength(2)
    expect(await g.interrupts()).toEqual([])
    await g.resume("yes").catch(() => undefined)
    expect([...paid].sort()).toEqual(["pay_one:a", "pay_two:b"])
  })

  it("a ledger with predicates (effect-commit protocol), the death-signal gate and a reconciler: the resume pays once", async () => {
    const paid: string[] = []
    const ledger = new ActionLedger({
      storage: new MemoryLedgerStorage(),
      reclaimRequiresDeathSignal: true,
      predicates: [{ name: "limit", check: () => true }],
      reconciler: { reconcile: () => ({ status: "NOT_EXECUTED" as const }) },
      onWarning: () => {},
    })
    const pay = askThenPay(paid)
    const g = graphOf(ledger, [pay], [{ id: "call_pol", name: "pay", args: { to: "a" } }], "t-policy")
    await g.start()
    const out = await g.resume("yes")
    await g.resume("yes")
    expect(toolMessages(out).map((m) => m.content)).toEqual(["paid a"])
    expect(paid).toEqual(["a"])
  })

  it("real Redis, two graph processes sharing the ledger resume the same pause: one payment", async () => {
    const prefix = `mycelium-test:${runTag("lg-interrupt")}:action:`
    const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
    const stores = [new RedisLedgerStorage({ url, prefix }), new RedisLedgerStorage({ url, prefix })]
    try {
      const paid: string[] = []
      const pay = askThenPay(paid, 30)
      const ledgers = stores.map(
        (storage) => new ActionLedger({ storage, pollInterval: 0.01, onWarning: () => {} }),
      )
      const call = [{ id: `call_${runTag("redis")}`, name: "pay", args: { to: "a" } }]
      // Two workers each hold their own checkpoint of the same thread (same thread id, same tool-call id).
      const [g1, g2] = ledgers.map((l) => graphOf(l, [pay], call, "t-redis"))
      if (!g1 || !g2) throw new Error("unreachable")
      await g1.start()
      await g2.start()
      const outs = await Promise.all([g1.resume("yes"), g2.resume("yes")])
      expect(paid).toEqual(["a"])
      for (const out of outs) expect(toolMessages(out).map((m) => m.content)).toEqual(["paid a"])
    } finally {
      for (const s of stores) s.close()
    }
  })

  it("RemoteLedger, interrupt() after sideEffect() began: the call fails now, it does not pause on a dead end", async () => {
    const storage = new MemoryLedgerStorage()
    const app = createLedgerApp({ storage, pollInterval: 0.005 })
    const fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.fetch(new Request(input, init))) as typeof globalThis.fetch
    const remote = new RemoteLedger({ baseUrl: "http://edge.test", fetch, onWarning: () => {} })
    const paid: string[] = []
    const pay = tool(
      async ({ to }, config) => {
        const tx = transitionOf(config)
        await tx.sideEffect(async () => paid.push(to))
        return `paid ${to}: ${String(interrupt({ question: "note?" }))}`
      },
      { name: "pay", description: "pay", schema },
    )
    const g = graphOf(remote, [pay], [{ id: "call_remote_late", name: "pay", args: { to: "a" } }], "t-remote")
    const out = await g.start()
    expect(String(toolMessages(out)[0]?.content)).toContain("called interrupt() inside its side effect")
    expect(await g.interrupts()).toEqual([])
    expect(paid).toEqual(["a"])
  })

  it("an answer that fails interrupt()'s responseSchema can be given again, and then pays once", async () => {
    const paid: string[] = []
    const ledger = new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })
    const pay = tool(
      async ({ to }, config) => {
        const ok = interrupt({ question: `pay ${to}?` }, { responseSchema: z.enum(["yes", "no"]) })
        if (ok !== "yes") return "no"
        return transitionOf(config).sideEffect(async () => {
          paid.push(to)
          return `paid ${to}`
        })
      },
      { name: "pay", description: "pay", schema },
    )
    // handleToolErrors: false, so the refused answer fails the run and LangGraph keeps the question open.
    const tools = guardTools(ledger, [pay], { pay: { binding: payment, boundary: "manual" } })
    const graph = scriptedGraph(
      tools,
      [{ id: "call_schema", name: "pay", args: { to: "a" } }],
      undefined,
      false,
    )
    const config = { configurable: { thread_id: "t-schema" } }
    await graph.invoke({ messages: [{ role: "user", content: "go" }] }, config)
    await expect(graph.invoke(new Command({ resume: "maybe" }), config)).rejects.toThrow("Invalid option")
    expect(paid).toEqual([])
    const pending = (await graph.getState(config)).tasks.flatMap((t) => t.interrupts)
    expect(pending.map((i) => i.value)).toEqual([{ question: "pay a?" }])
    const out = await graph.invoke(new Command({ resume: "yes" }), config)
    expect(toolMessages(out).map((m) => m.content)).toEqual(["paid a"])
    await graph.invoke(new Command({ resume: "yes" }), config)
    expect(paid).toEqual(["a"])
  })
})
