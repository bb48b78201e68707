// Adversarial review of ToolRunner: the model picks the tool, the arguments and the ids, and it retries. What
// goes back to it must be about its own call, and no answer of its can keep the runner going forever.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import {
  bounded,
  ToolBoundaryError,
  ToolBoundaryExhaustedError,
  ToolRegistry,
  ToolRunner,
} from "../../../src/core/tools/index.ts"

type Msg = { role: string; content: string; tool_call_id?: string }
const SECRET = "sk-live-4f9a8b7c6d5e"

// An internal tool the agent's tool calls with credentials the model must never see.
const vault = bounded(
  async (a: { api_key: string; account: string }) => ({ balance: 10, account: a.account }),
  {
    name: "vault_lookup",
    schema: { api_key: { type: "string", pattern: "^vk_" }, account: { type: "string" } },
  },
)

describe("ToolRunner feeds back only the boundary errors of the call the model made", () => {
  it("an inner tool's boundary error propagates to the caller instead of going to the model with its arguments", async () => {
    const balance = bounded(
      async (a: { account: string }) => vault({ api_key: SECRET, account: a.account }),
      { name: "get_balance", schema: { account: { type: "string" } } },
    )
    const registry = new ToolRegistry()
    registry.register(balance)
    let modelCalls = 0
    const error = await new ToolRunner({ registry })
      .runWithLlmRetry<Msg>(balance, {
        messages: [{ role: "user", content: "balance?" }],
        toolCallId: "call_1",
        args: { account: "a1" },
        invokeLlm: (messages) => {
          modelCalls++
          return messages
        },
        parseToolCall: () => ({ name: "get_balance", args: { account: "a1" } }),
      })
      .catch((e: unknown) => e)
    expect(modelCalls).toBe(0)
    expect(error).toBeInstanceOf(ToolBoundaryError)
    expect((error as ToolBoundaryError).toolName).toBe("vault_lookup")
    expect(JSON.stringify(error instanceof ToolBoundaryExhaustedError ? error.messages : [])).not.toContain(
      SECRET,
    )
  })

  it("the model's own bad calls still go back to it", async () => {
    const search = bounded(async (a: { q: string }) => `found ${a.q}`, {
      name: "search",
      schema: { q: { type: "string", min_length: 2 } },
    })
    const registry = new ToolRegistry()
    registry.register(search)
    const seen: Msg[][] = []
    const out = await new ToolRunner({ registry, maxLlmRetries: 3 }).runWithLlmRetry<Msg>(search, {
      messages: [],
      toolCallId: "c1",
      args: { q: "x" },
      invokeLlm: (messages) => {
        seen.push([...messages])
        return messages
      },
      parseToolCall: () =>
        seen.length === 1
          ? { name: "search", args: { q: "y" }, toolCallId: "c2" }
          : { name: "search", args: { q: "ok" } },
    })
    expect(out.result).toBe("found ok")
    expect(out.toolName).toBe("search")
    expect(seen.map((m) => m.at(-1)?.tool_call_id)).toEqual(["c1", "c2"])
  })

  it("an inner tool's invalid output fails the outer call once instead of re-running its body", async () => {
    const report = bounded(async (_: object) => ({ total: "not a number" }) as unknown, {
      name: "inner_report",
      outputSchema: { total: { type: "integer" } },
    })
    let charges = 0
    const checkout = bounded(
      async (_: { cart: string }) => {
        charges++ // a side effect the retry would repeat
        return report({})
      },
      { name: "checkout", schema: { cart: { type: "string" } } },
    )
    const e = await new ToolRunner({ maxToolRetries: 3 })
      .call(checkout, { cart: "c" })
      .catch((err: unknown) => err)
    expect(e).toBeInstanceOf(ToolBoundaryError)
    expect((e as ToolBoundaryError).toolName).toBe("inner_report")
    expect(charges).toBe(1)
  })

  it("a plain exception, whatever it says, is not fed to the model", async () => {
    const leaky = bounded(
      async (_: { q: string }) => {
        throw new Error(`connect failed: postgres://admin:${SECRET}@db/prod`)
      },
      { name: "leaky", schema: { q: { type: "string" } } },
    )
    let modelCalls = 0
    const e = await new ToolRunner()
      .runWithLlmRetry<Msg>(leaky, {
        messages: [],
        toolCallId: "c1",
        args: { q: "x" },
        invokeLlm: (m) => {
          modelCalls++
          return m
        },
        parseToolCall: () => null,
      })
      .catch((err: unknown) => err)
    expect(e).toBeInstanceOf(Error)
    expect(e).not.toBeInstanceOf(ToolBoundaryError)
    expect(modelCalls).toBe(0)
  })
})

describe("ToolRunner retry budgets cannot be escaped", () => {
  it("a model that keeps switching tools and ids spends one budget of maxLlmRetries", async () => {
    const a = bounded(async (x: { n: number }) => x.n, { name: "a", schema: { n: { type: "integer" } } })
    const b = bounded(async (x: { n: number }) => x.n, { name: "b", schema: { n: { type: "integer" } } })
    const registry = new ToolRegistry()
    registry.register(a)
    registry.register(b)
    let modelCalls = 0
    const e = await new ToolRunner({ registry, maxLlmRetries: 4 })
      .runWithLlmRetry<Msg>(a, {
        messages: [],
        toolCallId: "c0",
        args: { n: "x" },
        invokeLlm: (m) => {
          modelCalls++
          return m
        },
        parseToolCall: () => ({
          name: ["a", "b", "__proto__", "constructor"][modelCalls % 4] as string,
          args: { n: "x" },
          toolCallId: `c${modelCalls}`,
        }),
      })
      .catch((err: unknown) => err)
    expect(e).toBeInstanceOf(ToolBoundaryExhaustedError)
    expect(modelCalls).toBe(4)
    const messages = (e as ToolBoundaryExhaustedError).messages as Msg[]
    expect(messages).toHaveLength(5)
    expect(messages[2]?.content).toContain("Tool '__proto__' is not available")
  })

  it("a tool name that is not a string (parsed JSON with no usable toString) is refused, not a TypeError", async () => {
    const odd = JSON.parse('{"toString": 1}') as string
    const t = bounded(async (x: { n: number }) => x.n, { name: "t", schema: { n: { type: "integer" } } })
    const registry = new ToolRegistry()
    registry.register(t)
    const e = await new ToolRunner({ registry, maxLlmRetries: 1 })
      .runWithLlmRetry<Msg>(t, {
        messages: [],
        toolCallId: "c0",
        args: { n: "x" },
        invokeLlm: (m) => m,
        parseToolCall: () => ({ name: odd, args: { n: 1 } }),
      })
      .catch((err: unknown) => err)
    expect(e).toBeInstanceOf(ToolBoundaryExhaustedError)
    const last = (e as ToolBoundaryExhaustedError).lastError
    expect(last.violation).toBe("not_in_allowlist")
    expect(last.llmMessage).toContain("Tool '{'toString': 1}' is not available")
    let direct: unknown
    try {
      registry.validateCall(Object.create(null) as string)
    } catch (err) {
      direct = err
    }
    expect(direct).toBeInstanceOf(ToolBoundaryError)
    await expect(
      new ToolRunner().runWithLlmRetry<Msg>(t, {
        messages: [],
        toolCallId: "c0",
        args: { n: "x" },
        invokeLlm: (m) => m,
        parseToolCall: () => ({ name: odd, args: {} }),
      }),
    ).rejects.toThrow("The model chose '{'toString': 1}'")
  })

  it.each([
    ["maxLlmRetries", Number.NaN],
    ["maxToolRetries", Number.NaN],
    ["maxLlmRetries", Number.POSITIVE_INFINITY],
    ["maxToolRetries", "3"],
  ])("refuses %s = %s at construction (NaN retried forever)", (option, value) => {
    expect(() => new ToolRunner({ [option]: value } as never)).toThrow(InvalidOptionError)
  })

  it("invalid output is retried exactly maxToolRetries times, however the tool fails", async () => {
    for (const fail of ["bad output", "reject"] as const) {
      let runs = 0
      const tool = bounded(
        async (_: object) => {
          runs++
          // Rejects after an await (not `return Promise.reject(...)`, which workerd reports as unhandled before the
          // async function adopts it).
          if (fail === "reject") {
            await null
            throw new Error("later")
          }
          return { id: 5 } as unknown
        },
        { name: "flaky", outputSchema: { id: { type: "string" } } },
      )
      await new ToolRunner({ maxToolRetries: 3 }).call(tool, {}).catch(() => undefined)
      expect(runs).toBe(fail === "reject" ? 1 : 3)
    }
  })
})
