// Adversarial review of the AI SDK integration, driven through a real generateText loop (ai's mock model plays
// a hostile model: it chooses the tool-call ids and arguments).
import { generateText, stepCountIs, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import {
  ActionLedger,
  LedgerHardBlockError,
  LedgerIdentityConflictError,
  type LedgerStorage,
  LedgerStorageUnavailableError,
  MemoryLedgerStorage,
} from "../../src/core/index.ts"
import { guardTool, guardTools } from "../../src/integrations/ai-sdk.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"

function toolOutputs(result: { steps: Array<{ content: Array<{ type: string }> }> }) {
  return result.steps.flatMap((s) =>
    s.content.filter((p) => p.type === "tool-result" || p.type === "tool-error"),
  ) as Array<{ type: string; toolCallId: string; output?: unknown; error?: unknown }>
}

const newLedger = (storage = new MemoryLedgerStorage()) =>
  new ActionLedger({ storage, pollInterval: 0.005, onWarning: () => {} })

/** The stop condition docs/integrations.md gives: end the run when the ledger's store failed under a tool call. */
const ledgerOutage = ({ steps }: { steps: Array<{ content: Array<{ type: string; error?: unknown }> }> }) =>
  steps
    .at(-1)
    ?.content.some(
      (p) =>
        p.type === "tool-error" &&
        (p.error as { code?: string } | undefined)?.code === "ledger_storage_unavailable",
    ) ?? false

const billing = { agentId: "billing", policyVersion: "1", sideEffectClass: "keyed_mutate" as const }

describe("AI SDK integration, adversarial", () => {
  it("a schema transform runs once: the tool gets the amount the framework parsed, not a twice-transformed one", async () => {
    const charged: number[] = []
    const ledger = newLedger()
    const charge = guardTool(
      ledger,
      tool({
        // dollars in, cents out: not idempotent, so running the schema a second time multiplies again.
        inputSchema: z.object({ dollars: z.number().transform((d) => Math.round(d * 100)) }),
        execute: async ({ dollars }) => {
          charged.push(dollars)
          return { cents: dollars }
        },
      }),
      { name: "charge", binding: billing },
    )
    const call = { id: "call_cents", tool: "charge", input: { dollars: 5 } }
    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { charge },
      prompt: "charge 5 dollars",
      stopWhen: stepCountIs(4),
    })
    expect(toolOutputs(result).map((o) => o.output)).toEqual([{ cents: 500 }, { cents: 500 }])
    expect(charged).toEqual([500])
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.kwargs.dollars)).toEqual([500])
  })

  it("one tool-call id reused for another unbound tool is an identity conflict, never the other tool's result", async () => {
    const ledger = newLedger()
    let deletes = 0
    const tools = guardTools(ledger, {
      lookup: tool({
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }) => ({ secret: `record ${id}` }),
      }),
      remove: tool({
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }) => {
          deletes++
          return { deleted: id }
        },
      }),
    })
    const result = await generateText({
      model: scriptedModel([
        [{ id: "call_0", tool: "lookup", input: { id: "42" } }],
        [{ id: "call_0", tool: "remove", input: { id: "42" } }],
      ]),
      tools,
      prompt: "x",
      stopWhen: stepCountIs(4),
    })
    const [first, second] = toolOutputs(result)
    expect(first?.output).toEqual({ secret: "record 42" })
    expect(second?.type).toBe("tool-error")
    expect(second?.output).toBeUndefined()
    expect(second?.error).toBeInstanceOf(LedgerIdentityConflictError)
    expect(deletes).toBe(0)
  })

  it("one tool-call id in another thread does not replay that thread's stored result (unbound tool)", async () => {
    const storage = new MemoryLedgerStorage()
    const runs: string[] = []
    const forThread = (threadId: string) =>
      guardTools(
        newLedger(storage),
        {
          read_inbox: tool({
            inputSchema: z.object({}),
            execute: async (_input, options) => {
              const owner = String(options.experimental_context)
              runs.push(owner)
              return { inbox: `mail of ${owner}` }
            },
          }),
        },
        { read_inbox: { meta: () => ({ threadId }) } },
      )
    const call = { id: "call_1", tool: "read_inbox", input: {} }
    const alice = await generateText({
      model: scriptedModel([[call]]),
      tools: forThread("alice"),
      prompt: "x",
      experimental_context: "alice",
    })
    expect(toolOutputs(alice)[0]?.output).toEqual({ inbox: "mail of alice" })
    const bob = await generateText({
      model: scriptedModel([[call]]),
      tools: forThread("bob"),
      prompt: "x",
      experimental_context: "bob",
    })
    const out = toolOutputs(bob)[0]
    expect(out?.type).toBe("tool-error")
    expect(out?.error).toBeInstanceOf(LedgerIdentityConflictError)
    expect(JSON.stringify(out)).not.toContain("mail of alice")
    expect(String(out?.error)).not.toContain("mail of alice")
    expect(runs).toEqual(["alice"])
  })

  it("tool-call ids that are object-prototype names or carry separators are plain keys: each runs once", async () => {
    const ledger = newLedger()
    const seen: string[] = []
    const { note } = guardTools(ledger, {
      note: tool({
        inputSchema: z.object({ text: z.string() }),
        execute: async ({ text }) => {
          seen.push(text)
          return { saved: text }
        },
      }),
    })
    // generateText itself never executes calls named like Object.prototype members (ai 6 drops them), so the
    // guarded execute is called as the SDK calls it.
    const ids = ["__proto__", "constructor", "hasOwnProperty", "toString", "a:b:c", "x/../y", "\u0000"]
    const execute = note.execute as (input: unknown, options: { toolCallId: string; messages: [] }) => unknown
    for (let round = 0; round < 2; round++) {
      const outs = await Promise.all(ids.map((id) => execute({ text: id }, { toolCallId: id, messages: [] })))
      expect(outs).toEqual(ids.map((id) => ({ saved: id })))
    }
    expect(seen.sort()).toEqual([...ids].sort())
    expect((await ledger.listTransitions()).map((r) => r.requestId).sort()).toEqual([...ids].sort())
  })

  it("the framework's abort mid-effect leaves the row UNKNOWN (hard block), not IN_FLIGHT", async () => {
    const ledger = newLedger()
    let runs = 0
    const controller = new AbortController()
    const send = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ to: z.string() }),
        execute: async ({ to }, { abortSignal }) => {
          runs++
          controller.abort(new Error("user pressed stop"))
          abortSignal?.throwIfAborted()
          return `sent ${to}`
        },
      }),
      { name: "send", binding: billing },
    )
    const call = { id: "call_abort", tool: "send", input: { to: "a" } }
    await generateText({
      model: scriptedModel([[call]]),
      tools: { send },
      prompt: "x",
      abortSignal: controller.signal,
    }).catch(() => undefined)
    const rows = await ledger.listTransitions()
    expect(rows.map((r) => r.terminalOutcome)).toEqual(["UNKNOWN"])
    const again = await generateText({ model: scriptedModel([[call]]), tools: { send }, prompt: "x" })
    expect(toolOutputs(again)[0]?.error).toBeInstanceOf(LedgerHardBlockError)
    expect(runs).toBe(1)
  })

  it("a schema default that is new on every parse (a nonce) never runs a redispatch twice", async () => {
    const ledger = newLedger()
    let nonce = 0
    let runs = 0
    const send = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ to: z.string(), nonce: z.string().default(() => `n${++nonce}`) }),
        execute: async ({ to }) => {
          runs++
          return `sent ${to}`
        },
      }),
      { name: "send", binding: billing },
    )
    const call = { id: "call_nonce", tool: "send", input: { to: "a" } }
    const result = await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { send },
      prompt: "x",
      stopWhen: stepCountIs(4),
    })
    const [first, second] = toolOutputs(result)
    expect(first?.output).toBe("sent a")
    // The redispatch's arguments differ (a new nonce): refused as drift on its call id, not run again. The
    // framework hands the tool parsed arguments only, so a replay cannot see the model's raw input.
    expect(second?.type).toBe("tool-error")
    expect(second?.error).toBeInstanceOf(LedgerIdentityConflictError)
    expect(runs).toBe(1)
  })

  it("a meta function's empty fields never shadow the SDK's toolCallId (dedupe stays on)", async () => {
    const ledger = newLedger()
    let runs = 0
    const send = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ to: z.string() }),
        execute: async ({ to }) => {
          runs++
          return `sent ${to}`
        },
      }),
      {
        name: "send",
        // An application copying optional fields from its own context: absent ones come back undefined or "".
        meta: (o) => {
          const ctx = o.experimental_context as { callId?: string; thread?: string } | undefined
          return { toolCallId: ctx?.callId ?? "", threadId: ctx?.thread }
        },
      },
    )
    const call = { id: "call_meta", tool: "send", input: { to: "a" } }
    await generateText({
      model: scriptedModel([[call], [call]]),
      tools: { send },
      prompt: "x",
      stopWhen: stepCountIs(4),
    })
    expect(runs).toBe(1)
    expect((await ledger.listTransitions()).map((r) => r.requestId)).toEqual(["call_meta"])
  })

  it("a storage outage reaches the model as a tool error (ai 6 has no fail-closed hook): stopWhen ends the run", async () => {
    let down = false
    const inner = new MemoryLedgerStorage()
    const storage = new Proxy(inner, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver)
        if (typeof value !== "function") return value
        return (...args: unknown[]) => {
          if (down) throw new Error("ECONNRESET")
          return value.apply(target, args)
        }
      },
    }) as LedgerStorage
    const ledger = newLedger(storage as MemoryLedgerStorage)
    const charged: number[] = []
    const pay = guardTool(
      ledger,
      tool({
        inputSchema: z.object({ amount: z.number() }),
        execute: async ({ amount }) => {
          charged.push(amount)
          down = true // the completion write is lost
          return `paid ${amount}`
        },
      }),
      { name: "pay", binding: billing },
    )
    let modelCalls = 0
    const script = scriptedModel([
      [{ id: "call_a", tool: "pay", input: { amount: 10 } }],
      // What a model told "storage unavailable" does: calls again, under a new id (a new ledger key).
      [{ id: "call_b", tool: "pay", input: { amount: 10 } }],
    ])
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        modelCalls++
        down = false
        return script.doGenerate(options)
      },
    })
    const result = await generateText({
      model,
      tools: { pay },
      prompt: "pay 10",
      stopWhen: [stepCountIs(5), ledgerOutage],
    })
    expect(modelCalls).toBe(1)
    expect(charged).toEqual([10])
    expect(toolOutputs(result)[0]?.error).toBeInstanceOf(LedgerStorageUnavailableError)
  })
})
