import { describe, expect, it, vi } from "vitest"
import {
  bounded,
  SchemaBuildError,
  ToolBoundaryError,
  ToolBoundaryExhaustedError,
  ToolRegistry,
  ToolRunner,
  ToolRunnerConfigError,
  toolErrorMessage,
} from "../../../src/core/tools/index.ts"

type Msg = { role: string; content: string; tool_call_id?: string }

describe("ToolRegistry", () => {
  it("not_in_allowlist names the allowed tools", () => {
    const r = new ToolRegistry({ allowed: ["summarize", "search_docs"] })
    expect(() => r.validateCall("search_docs")).not.toThrow()
    let e: unknown
    try {
      r.validateCall("fetch_customer")
    } catch (err) {
      e = err
    }
    expect(e).toBeInstanceOf(ToolBoundaryError)
    const err = e as ToolBoundaryError
    expect(err.violation).toBe("not_in_allowlist")
    expect(err.message).toBe("fetch_customer: not_in_allowlist")
    expect(err.llmMessage).toBe(
      "Tool 'fetch_customer' is not available for this agent. Allowed tools: search_docs, summarize. " +
        "Use one of the allowed tools: search_docs, summarize.",
    )
  })

  it("allowed is a list of names: one string, an iterable of its letters, is refused", () => {
    // @ts-expect-error a string is not a list of tool names
    expect(() => new ToolRegistry({ allowed: "send_payment" })).toThrow(SchemaBuildError)
    expect(new ToolRegistry({ allowed: new Set(["a"]) }).allowedTools).toEqual(["a"])
  })

  it("an empty registry blocks everything", () => {
    const r = new ToolRegistry()
    expect(() => r.validateCall("x")).toThrow(
      expect.objectContaining({
        violation: "not_in_allowlist",
        llmMessage:
          "Tool 'x' is not available for this agent. Allowed tools: (none configured). Register allowed tools on ToolRegistry before dispatch.",
      }),
    )
  })

  it("register() allows the tool by its toolName and returns it unchanged", () => {
    const r = new ToolRegistry()
    const t = bounded(async (a: { q: string }) => a.q, { name: "search", schema: { q: {} } })
    expect(r.register(t)).toBe(t)
    expect(r.allowedTools).toEqual(["search"])
    expect(r.get("search")).toBe(t)
  })
})

describe("ToolRunner.call", () => {
  it("retries output failures at tool level whatever field failed (missing, type, pattern)", async () => {
    for (const badOutput of [{}, { id: 5 }, { id: "nope" }]) {
      let n = 0
      const tool = bounded(async (_: object) => (++n < 3 ? badOutput : { id: "c1" }), {
        name: "flaky",
        outputSchema: { id: { pattern: "^c\\d+$" } },
      })
      const runner = new ToolRunner({ maxToolRetries: 3 })
      expect(await runner.call(tool, {})).toEqual({ id: "c1" })
      expect(n).toBe(3)
    }
  })

  it("gives up after maxToolRetries total attempts and rethrows the last output error", async () => {
    const body = vi.fn(async (_: object) => ({}))
    const tool = bounded(body, { name: "bad", outputSchema: { id: {} } })
    await expect(new ToolRunner({ maxToolRetries: 2 }).call(tool, {})).rejects.toMatchObject({
      violation: "output_validation_failed",
    })
    expect(body).toHaveBeenCalledTimes(2)
  })

  it("maxToolRetries: 0 means a single attempt (the original crashed)", async () => {
    const body = vi.fn(async (_: object) => ({}))
    const tool = bounded(body, { name: "bad", outputSchema: { id: {} } })
    await expect(new ToolRunner({ maxToolRetries: 0 }).call(tool, {})).rejects.toBeInstanceOf(
      ToolBoundaryError,
    )
    expect(body).toHaveBeenCalledTimes(1)
  })

  it("does not retry input errors or plain exceptions, and checks the allowlist first", async () => {
    const body = vi.fn(async (a: { id: string }) => a.id)
    const tool = bounded(body, { name: "t", schema: { id: {} } })
    const runner = new ToolRunner({ registry: new ToolRegistry({ allowed: ["t"] }) })
    await expect(runner.call(tool, {} as { id: string })).rejects.toMatchObject({
      violation: "missing_required_field",
    })
    const boom = vi.fn(async () => {
      throw new Error("boom")
    })
    const boomTool = Object.assign(boom, { toolName: "t" })
    await expect(runner.call(boomTool, undefined)).rejects.toThrow("boom")
    expect(boom).toHaveBeenCalledTimes(1)
    const other = bounded(body, { name: "other" })
    await expect(runner.call(other, { id: "x" })).rejects.toMatchObject({ violation: "not_in_allowlist" })
    expect(body).not.toHaveBeenCalled()
  })
})

describe("ToolRunner.runWithLlmRetry", () => {
  const fetchCustomer = bounded(async (a: { customer_id: string }) => ({ id: a.customer_id }), {
    name: "fetch_customer",
    schema: { customer_id: { pattern: "^c\\d+$" } },
  })
  const searchDocs = bounded(async (a: { q: string }) => [`doc about ${a.q}`], {
    name: "search_docs",
    schema: { q: {} },
  })

  it("feeds the error to the model and runs its corrected call", async () => {
    const runner = new ToolRunner({ registry: new ToolRegistry() })
    runner.registry?.register(fetchCustomer)
    const invokeLlm = vi.fn(async (m: Msg[]) => [...m, { role: "assistant", content: "retrying" }])
    const out = await runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [{ role: "user", content: "get x1" }],
      toolCallId: "call_1",
      args: { customer_id: "x1" },
      invokeLlm,
      parseToolCall: () => ({ name: "fetch_customer", args: { customer_id: "c1" }, toolCallId: "call_2" }),
    })
    expect(out.result).toEqual({ id: "c1" })
    expect(out.toolCallId).toBe("call_2")
    expect(invokeLlm).toHaveBeenCalledTimes(1)
    expect(out.messages[1]).toEqual(
      toolErrorMessage(
        "call_1",
        "Tool 'fetch_customer' failed input validation. Field: customer_id. Received: 'x1'. " +
          "Expected: string matching pattern '^c\\d+$'. Provide customer_id in the required format.",
      ),
    )
  })

  it("lets the model switch to another allowed tool", async () => {
    const registry = new ToolRegistry()
    registry.register(fetchCustomer)
    registry.register(searchDocs)
    const runner = new ToolRunner({ registry })
    const out = await runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [],
      toolCallId: "call_1",
      args: { customer_id: "bad" },
      invokeLlm: (m) => m,
      parseToolCall: (_m, previous) => {
        expect(previous).toBe("fetch_customer")
        return { name: "search_docs", args: { q: "refunds" } }
      },
    })
    expect(out).toMatchObject({
      result: ["doc about refunds"],
      toolName: "search_docs",
      toolCallId: "call_1",
    })
  })

  it("a switch to a tool outside the allowlist is fed back as not_in_allowlist", async () => {
    const registry = new ToolRegistry()
    registry.register(fetchCustomer)
    const runner = new ToolRunner({ registry, maxLlmRetries: 2 })
    const picks = [
      { name: "delete_everything", args: {} },
      { name: "fetch_customer", args: { customer_id: "c9" } },
    ]
    const out = await runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [],
      toolCallId: "call_1",
      args: { customer_id: "bad" },
      invokeLlm: (m) => m,
      parseToolCall: () => picks.shift() ?? null,
    })
    expect(out.result).toEqual({ id: "c9" })
    expect(out.messages.map((m) => m.content)[1]).toMatch(/^Tool 'delete_everything' is not available/)
  })

  it("raises ToolBoundaryExhaustedError after maxLlmRetries model calls, with the error turns", async () => {
    const runner = new ToolRunner({ maxLlmRetries: 2 })
    const invokeLlm = vi.fn(async (m: Msg[]) => m)
    const p = runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [],
      toolCallId: "call_1",
      args: { customer_id: "bad" },
      invokeLlm,
      parseToolCall: () => ({ name: "fetch_customer", args: { customer_id: "still-bad" } }),
    })
    const e = (await p.catch((err: unknown) => err)) as ToolBoundaryExhaustedError
    expect(e).toBeInstanceOf(ToolBoundaryExhaustedError)
    expect(e.code).toBe("tool_boundary_exhausted")
    expect(e.message).toMatch(/^Tool 'fetch_customer' failed after 2 LLM retries\./)
    expect(e.lastError.violation).toBe("pattern_mismatch")
    expect(e.messages).toHaveLength(3)
    expect(invokeLlm).toHaveBeenCalledTimes(2)
  })

  it("stops when the model answers without a tool call", async () => {
    const runner = new ToolRunner()
    const p = runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [],
      toolCallId: "c",
      args: { customer_id: "bad" },
      invokeLlm: (m) => [...m, { role: "assistant", content: "I give up" }],
      parseToolCall: () => null,
    })
    await expect(p).rejects.toBeInstanceOf(ToolBoundaryExhaustedError)
  })

  it("an allowed tool with no implementation is a configuration error, not a model retry", async () => {
    const runner = new ToolRunner({ registry: new ToolRegistry({ allowed: ["fetch_customer", "ghost"] }) })
    const p = runner.runWithLlmRetry<Msg>(fetchCustomer, {
      messages: [],
      toolCallId: "c",
      args: { customer_id: "bad" },
      invokeLlm: (m) => m,
      parseToolCall: () => ({ name: "ghost", args: {} }),
    })
    await expect(p).rejects.toBeInstanceOf(ToolRunnerConfigError)
  })
})
