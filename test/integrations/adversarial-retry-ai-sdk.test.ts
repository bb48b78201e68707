// Adversarial review of the held retry (failed-calls.ts) through the AI SDK's real generateText loop: spellings
// of the same arguments, copies of the same guarded tool, and a flood of failures must not let a retry of a
// payment that may have taken effect charge again.
import { generateText, type ModelMessage, stepCountIs, type Tool, type ToolExecutionOptions, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { describe, expect, it } from "vitest"
import { z } from "zod"
import { ActionLedger, MemoryLedgerStorage } from "../../src/core/index.ts"
import { guardTool, guardTools, transitionOf } from "../../src/integrations/ai-sdk.ts"
import { scriptedModel } from "./scripted/ai-sdk.ts"

const binding = { agentId: "billing", policyVersion: "1", sideEffectClass: "non_idempotent_mutate" as const }
const newLedger = () => new ActionLedger({ storage: new MemoryLedgerStorage(), onWarning: () => {} })

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
}

/** A model that calls `pay` once per step with the given raw argument text (a new call id each time). */
function rawModel(inputs: string[]): MockLanguageModelV3 {
  let step = 0
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const input = inputs[step++]
      return input === undefined
        ? {
            content: [{ type: "text" as const, text: "done" }],
            finishReason: { unified: "stop" as const, raw: "stop" },
            usage,
            warnings: [],
          }
        : {
            content: [{ type: "tool-call" as const, toolCallId: `call_${step}`, toolName: "pay", input }],
            finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
            usage,
            warnings: [],
          }
    },
  })
}

/** The options of a call made by a model that was shown the calls `earlier` (as the SDK passes them). */
function optionsAfter(toolCallId: string, context: object, earlier: string[] = []): ToolExecutionOptions {
  const messages: ModelMessage[] = earlier.map((id) => ({
    role: "assistant",
    content: [{ type: "tool-call", toolCallId: id, toolName: "pay", input: {} }],
  }))
  return { toolCallId, messages, experimental_context: context }
}

/** Charges, then times out the first `failures` times. */
function gateway(failures = 1) {
  const charges: string[] = []
  let left = failures
  const charge = async ({ to, cents }: { to: string; cents: unknown }) => {
    charges.push(`${to}:${String(cents)}`)
    if (left-- > 0) throw new Error("gateway timed out")
    return `paid ${String(cents)} to ${to}`
  }
  return { charges, charge }
}

const payTool = (charge: ReturnType<typeof gateway>["charge"]) =>
  tool({
    description: "pay",
    inputSchema: z.object({ to: z.string(), cents: z.number() }),
    execute: charge,
  })

type Steps = ReadonlyArray<{ content: ReadonlyArray<{ type: string }> }>
const hardBlocks = (steps: Steps) =>
  steps
    .flatMap((s) => s.content)
    .filter((p) => p.type === "tool-error")
    .map((p) => (p as unknown as { error: { code?: string } }).error.code)
    .filter((c) => c === "ledger_hard_block")

describe("AI SDK held retry: copies of one guarded tool", () => {
  it("a chat app that guards its tools per request (thread id from meta) holds the next request's retry", async () => {
    const { charges, charge } = gateway()
    const ledger = newLedger()
    const pay = payTool(charge)
    // The common route-handler shape: the ledger lives for the process, the tool set is built per request.
    const request = (id: string) =>
      generateText({
        model: scriptedModel([[{ id, tool: "pay", input: { to: "acct_1", cents: 500 } }]]),
        tools: guardTools(ledger, { pay }, { pay: { binding, meta: () => ({ threadId: "chat-1" }) } }),
        prompt: "pay",
        stopWhen: stepCountIs(3),
      })
    await request("call_a")
    const second = await request("call_b")
    expect(charges).toEqual(["acct_1:500"])
    expect(hardBlocks(second.steps)).toEqual(["ledger_hard_block"])
  })

  it("two tool sets guarding the same tool in one run hold each other's retry", async () => {
    const { charges, charge } = gateway()
    const ledger = newLedger()
    const pay = payTool(charge)
    const first = guardTool(ledger, pay, { name: "pay", binding })
    const second = guardTool(ledger, pay, { name: "pay", binding })
    const context = { conversation: "c-1" }
    const input = { to: "acct_1", cents: 500 }
    await expect(first.execute?.(input, optionsAfter("call_1", context))).rejects.toThrow("gateway timed out")
    await expect(second.execute?.(input, optionsAfter("call_2", context, ["call_1"]))).rejects.toMatchObject({
      code: "ledger_hard_block",
    })
    expect(charges).toEqual(["acct_1:500"])
  })

  it("another ledger is another memory: the same tool on a second ledger is not held by the first's failure", async () => {
    const { charges, charge } = gateway()
    const pay = payTool(charge)
    const context = { conversation: "c-1" }
    const input = { to: "acct_1", cents: 500 }
    const a = guardTool(newLedger(), pay, { name: "pay", binding })
    const b = guardTool(newLedger(), pay, { name: "pay", binding })
    await expect(a.execute?.(input, optionsAfter("call_1", context))).rejects.toThrow("gateway timed out")
    await expect(b.execute?.(input, optionsAfter("call_2", context, ["call_1"]))).resolves.toBe(
      "paid 500 to acct_1",
    )
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
  })
})

describe("AI SDK held retry: spellings the ledger hashes alike", () => {
  // bounds: false because the guard's re-check of a transformed value against the input schema refuses it
  // (type_mismatch): reported apart, it is not the hold's doing.
  it("a bigint amount (a schema that transforms to bigint) is held like any other", async () => {
    const { charges, charge } = gateway()
    const pay = guardTool(
      newLedger(),
      tool({
        description: "pay",
        inputSchema: z.object({ to: z.string(), cents: z.string().transform((c) => BigInt(c)) }),
        execute: charge,
      }) as Tool,
      { name: "pay", binding, bounds: false },
    )
    const result = await generateText({
      model: scriptedModel(
        [1, 2].map((i) => [{ id: `call_${i}`, tool: "pay", input: { to: "acct_1", cents: "500" } }]),
      ),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(4),
      experimental_context: { conversation: "c-1" },
    })
    expect(charges).toEqual(["acct_1:500"])
    expect(hardBlocks(result.steps)).toEqual(["ledger_hard_block"])
  })

  it('500, 500.0, "500" under z.coerce, reordered keys and stripped extra keys are one call', async () => {
    const { charges, charge } = gateway()
    const pay = guardTool(
      newLedger(),
      tool({
        description: "pay",
        inputSchema: z.object({ to: z.string(), cents: z.coerce.number() }),
        execute: charge,
      }) as Tool,
      { name: "pay", binding },
    )
    const spellings = [
      '{"to":"acct_1","cents":500}',
      '{"cents":500.0,"to":"acct_1"}',
      '{"to":"acct_1","cents":"500"}',
      '{"to":"acct_1","cents":5e2,"memo":"retry"}',
    ]
    const result = await generateText({
      model: rawModel(spellings),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(6),
      experimental_context: { conversation: "c-1" },
    })
    expect(charges).toEqual(["acct_1:500"])
    expect(hardBlocks(result.steps)).toHaveLength(3)
  })
})

describe("AI SDK held retry: the memory bound", () => {
  it.each([
    // More than the tool's whole memory from one conversation: it pushes out only its own.
    { conversations: 1, calls: 11_000 },
    // Eight times what one tool used to remember in all, from 20 conversations (each under its own bound).
    { conversations: 20, calls: 8000 },
  ])(
    "a flood of failing calls from $conversations other conversation(s) does not push out this conversation's hold",
    async ({ conversations, calls }) => {
      const charges: string[] = []
      const pay = guardTool(
        newLedger(),
        tool({
          description: "pay",
          inputSchema: z.object({ to: z.string(), cents: z.number() }),
          execute: async ({ to, cents }: { to: string; cents: number }): Promise<string> => {
            charges.push(`${to}:${cents}`)
            throw new Error("gateway timed out")
          },
        }),
        { name: "pay", binding },
      )
      const victim = { user: "victim" }
      const hostiles = Array.from({ length: conversations }, (_, i) => ({ user: `hostile-${i}` }))
      const victimPays = (id: string, earlier: string[] = []) =>
        pay.execute?.({ to: "acct_v", cents: 500 }, optionsAfter(id, victim, earlier))
      await expect(victimPays("v_1")).rejects.toThrow("timed out")
      for (let i = 0; i < calls; i++) {
        const hostile = hostiles[i % hostiles.length] as object
        await expect(
          pay.execute?.({ to: `acct_${i}`, cents: 1 }, optionsAfter(`h_${i}`, hostile)),
        ).rejects.toThrow()
      }
      await expect(victimPays("v_2", ["v_1"])).rejects.toMatchObject({
        code: "ledger_hard_block",
      })
      expect(charges.filter((c) => c === "acct_v:500")).toHaveLength(1)
    },
  )
})

describe("AI SDK held retry: a conversation that fills its memory", () => {
  const ROOM = 1000
  /**
   * A payment tool whose gateway always times out after charging. With `manual`, a card to `decl_*` is declined
   * before the side effect (a failure that is settled), and the charge runs in `sideEffect()`.
   */
  function flakyPay(ledger: ActionLedger, options: { threadId?: string; manual?: true } = {}) {
    const charges: string[] = []
    const pay = guardTool(
      ledger,
      tool({
        description: "pay",
        inputSchema: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }: { to: string; cents: number }, callOptions): Promise<string> => {
          const charge = async (): Promise<string> => {
            charges.push(`${to}:${cents}`)
            throw new Error("gateway timed out")
          }
          if (!options.manual) return charge()
          if (to.startsWith("decl_")) throw new Error("card declined")
          return transitionOf(callOptions).sideEffect(charge)
        },
      }),
      {
        name: "pay",
        binding,
        ...(options.manual ? { boundary: "manual" as const } : {}),
        ...(options.threadId ? { meta: () => ({ threadId: options.threadId }) } : {}),
      },
    )
    return { pay, charges }
  }
  const outcome = (p: unknown) =>
    Promise.resolve(p).then(
      () => "ok",
      (e: { code?: string; message?: string }) =>
        e.code === "ledger_hard_block"
          ? e.message?.includes("takes no new call")
            ? "full"
            : "held"
          : "failed",
    )

  it.each([
    { by: "a thread (meta)", threadId: "t-1" },
    { by: "its experimental_context", threadId: undefined },
  ])(
    "scoped by $by: a model that sprays failing calls cannot push out the hold on its own ambiguous payment",
    async ({ threadId }) => {
      const { pay, charges } = flakyPay(newLedger(), threadId ? { threadId } : {})
      const context = { conversation: "c-1" }
      const call = (id: string, to: string, earlier: string[]) =>
        outcome(pay.execute?.({ to, cents: 500 }, optionsAfter(id, context, earlier)))
      expect(await call("v_1", "acct_v", [])).toBe("failed")
      const sprayed: string[] = []
      for (let i = 0; i < ROOM + 100; i++) sprayed.push(await call(`h_${i}`, `acct_${i}`, ["v_1"]))
      // The room holds the payment and 999 other failed calls; the model's next 101 calls are refused unrun.
      expect(sprayed.filter((o) => o === "failed")).toHaveLength(ROOM - 1)
      expect(sprayed.slice(ROOM - 1).every((o) => o === "full")).toBe(true)
      expect(await call("v_2", "acct_v", ["v_1"])).toBe("held")
      expect(charges.filter((c) => c === "acct_v:500")).toHaveLength(1)
      expect(charges).toHaveLength(ROOM)
    },
  )

  it("an operator's not-executed settlement of its oldest calls frees room; another run on a shared context is not blocked", async () => {
    const ledger = newLedger()
    const { pay, charges } = flakyPay(ledger)
    const shared = { deps: "shared" }
    const call = (id: string, to: string, earlier: string[]) =>
      outcome(pay.execute?.({ to, cents: 1 }, optionsAfter(id, shared, earlier)))
    for (let i = 0; i < ROOM; i++) await call(`h_${i}`, `acct_${i}`, i ? ["h_0", "h_1"] : [])
    expect(await call("h_next", "acct_next", ["h_0", "h_1"])).toBe("full")
    // The conversation's oldest call (rows made in one millisecond list in any order).
    const stuck = await ledger.listTransitions({ stuck: true })
    const oldest = stuck.find((row) => row.kwargs.tool_call_id === "h_0")
    if (!oldest) throw new Error("no stuck row for h_0")
    await ledger.release(oldest.requestId, { verified: "not_executed", by: "ops", reason: "no charge seen" })
    expect(await call("h_next", "acct_next", ["h_0", "h_1"])).toBe("failed")
    expect(await call("h_next2", "acct_next2", ["h_0", "h_1"])).toBe("full")
    // A run that was never shown these calls is another conversation on the same object.
    expect(await call("u_1", "acct_u", [])).toBe("failed")
    expect(charges.filter((c) => c === "acct_next:1" || c === "acct_u:1")).toHaveLength(2)
  })

  it("failures before the side effect are settled, and do not fill the room", async () => {
    const { pay, charges } = flakyPay(newLedger(), { manual: true, threadId: "t-2" })
    const call = (id: string, to: string) => outcome(pay.execute?.({ to, cents: 1 }, optionsAfter(id, {})))
    // More calls that may have taken effect than a full conversation re-reads, then a card declined again and again.
    for (let i = 0; i < 10; i++) expect(await call(`a_${i}`, `acct_${i}`)).toBe("failed")
    const declined: string[] = []
    for (let i = 0; i < ROOM + 10; i++) declined.push(await call(`d_${i}`, `decl_${i}`))
    expect(declined.filter((o) => o === "failed")).toHaveLength(ROOM + 10)
    expect(await call("a_next", "acct_next")).toBe("failed")
    expect(charges).toHaveLength(11)
  })
})

describe("AI SDK held retry: what must still run", () => {
  it("one experimental_context shared by every run (app dependencies): another user's run is not held", async () => {
    const { charges, charge } = gateway()
    const ledger = newLedger()
    const deps = { gateway: "shared" }
    const pay = guardTool(ledger, payTool(charge), { name: "pay", binding })
    const userRun = (id: string) =>
      generateText({
        model: scriptedModel([[{ id, tool: "pay", input: { to: "acct_1", cents: 500 } }]]),
        tools: { pay },
        prompt: "pay",
        stopWhen: stepCountIs(3),
        experimental_context: deps,
      })
    await userRun("alice_1")
    const bob = await userRun("bob_1")
    // Bob's payment ran, and Bob's model was never shown Alice's call id or request id.
    expect(charges).toEqual(["acct_1:500", "acct_1:500"])
    expect(hardBlocks(bob.steps)).toEqual([])
  })

  it("in that shared context, the retry inside one run is still held", async () => {
    const { charges, charge } = gateway()
    const pay = guardTool(newLedger(), payTool(charge), { name: "pay", binding })
    const deps = { gateway: "shared" }
    const result = await generateText({
      model: scriptedModel(
        [1, 2].map((i) => [{ id: `c_${i}`, tool: "pay", input: { to: "acct_1", cents: 500 } }]),
      ),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(4),
      experimental_context: deps,
    })
    expect(charges).toEqual(["acct_1:500"])
    expect(hardBlocks(result.steps)).toEqual(["ledger_hard_block"])
  })

  it("a second payment after the first completed, and parallel identical calls in one step, all run", async () => {
    const { charges, charge } = gateway(0)
    const pay = guardTool(newLedger(), payTool(charge), { name: "pay", binding })
    const input = { to: "acct_1", cents: 500 }
    await generateText({
      model: scriptedModel([
        [{ id: "c_1", tool: "pay", input }],
        [{ id: "c_2", tool: "pay", input }],
        [
          { id: "c_3", tool: "pay", input },
          { id: "c_4", tool: "pay", input },
        ],
      ]),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(5),
      experimental_context: { conversation: "c-1" },
    })
    expect(charges).toHaveLength(4)
  })
})

describe("AI SDK held retry: two users in one shared experimental_context, interleaved", () => {
  /** A scripted model that runs `between` before its step `at` (another user's run, mid-way through this one). */
  function interleaved(
    steps: Parameters<typeof scriptedModel>[0],
    at: number,
    between: () => Promise<unknown>,
  ) {
    const model = scriptedModel(steps)
    const answer = model.doGenerate.bind(model)
    let step = 0
    model.doGenerate = async (options) => {
      if (step++ === at) await between()
      return answer(options)
    }
    return model
  }

  it.each([
    ["succeeds", 0],
    ["fails too", 1],
  ])("Alice's retry is held though Bob's identical payment in between %s", async (_, bobFailures) => {
    const charges: string[] = []
    let failing = new Set(["alice_1"])
    const ledger = newLedger()
    const deps = { gateway: "shared" }
    const pay = guardTool(
      ledger,
      tool({
        description: "pay",
        inputSchema: z.object({ to: z.string(), cents: z.number() }),
        execute: async ({ to, cents }: { to: string; cents: number }, { toolCallId }) => {
          charges.push(`${toolCallId}:${to}:${cents}`)
          if (failing.has(toolCallId)) throw new Error("gateway timed out")
          return `paid ${cents} to ${to}`
        },
      }),
      { name: "pay", binding },
    )
    const input = { to: "acct_1", cents: 500 }
    const bob = () => {
      if (bobFailures) failing = new Set([...failing, "bob_1"])
      return generateText({
        model: scriptedModel([[{ id: "bob_1", tool: "pay", input }]]),
        tools: { pay },
        prompt: "pay",
        stopWhen: stepCountIs(3),
        experimental_context: deps,
      })
    }
    const alice = await generateText({
      model: interleaved(
        [[{ id: "alice_1", tool: "pay", input }], [{ id: "alice_2", tool: "pay", input }]],
        1,
        bob,
      ),
      tools: { pay },
      prompt: "pay",
      stopWhen: stepCountIs(4),
      experimental_context: deps,
    })
    expect(charges).toEqual(["alice_1:acct_1:500", "bob_1:acct_1:500"])
    expect(hardBlocks(alice.steps)).toEqual(["ledger_hard_block"])
  })
})
