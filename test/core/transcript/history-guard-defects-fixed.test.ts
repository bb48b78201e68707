// Defects found while mutation-testing HistoryGuard: each test failed on the code before its fix.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import {
  HistoryDropError,
  HistoryGuard,
  type HistoryGuardOptions,
} from "../../../src/core/transcript/index.ts"

type Msg = Record<string, unknown>

describe("HistoryGuard token estimate (fixed defects)", () => {
  it("a BigInt anywhere in a tool result does not hide the rest of it from maxTokens", () => {
    // A database row with a bigint id, returned as an AI SDK json output: JSON.stringify throws a TypeError, and the
    // whole 100 KB value was counted as "[object Object]" (15 characters, 3 tokens).
    const row = { id: 9007199254740993n, body: "x".repeat(100_000) }
    const msgs: Msg[] = [
      { role: "user", content: "q" },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "db", input: {} }] },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "db", output: { type: "json", value: row } },
        ],
      },
    ]
    expect(new HistoryGuard().estimateTokens(msgs)).toBeGreaterThan(25_000)
    expect(() => new HistoryGuard({ maxTokens: 1_000 }).validate(msgs)).toThrow(
      expect.objectContaining({ reason: "token_limit" }),
    )
    // Two rows that differ only by their bigint id are different turns, not one "[object Object]".
    const withId = (id: bigint): Msg[] => [
      ...msgs.slice(0, 2),
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "db", output: { type: "json", value: { id } } },
        ],
      },
    ]
    const guard = new HistoryGuard()
    guard.validate(withId(1n))
    expect(() => guard.validate(withId(2n))).toThrow(HistoryDropError)
  })

  it("a legacy OpenAI function_call counts its arguments, and two different ones are different turns", () => {
    const call = (name: string, args: string): Msg => ({
      role: "assistant",
      content: null,
      function_call: { name, arguments: args },
    })
    const big = call("search", JSON.stringify({ q: "x".repeat(100_000) }))
    expect(new HistoryGuard().estimateTokens([big])).toBeGreaterThan(25_000)
    // Swapping one call for another is an edit the drop check must see, as it does for tool_calls.
    const guard = new HistoryGuard()
    guard.validate([{ role: "user", content: "q" }, call("search", '{"q":"a"}')])
    expect(() => guard.validate([{ role: "user", content: "q" }, call("delete_all", "{}")])).toThrow(
      HistoryDropError,
    )
  })
})

describe("HistoryGuard function options (fixed defects)", () => {
  // A tiktoken encoder object or a logger object passed where a function goes: refused when the guard is built,
  // like an unknown format, not a TypeError out of validate() once the history grows (onEvent only runs near the
  // limit, so the crash waits for production).
  for (const key of ["tokenizer", "onEvent"] as const) {
    it(`${key} that is not a function is an InvalidOptionError when the guard is built`, () => {
      const make = () =>
        new HistoryGuard({ maxTokens: 10, [key]: { encode: () => [] } } as HistoryGuardOptions)
      expect(make).toThrow(InvalidOptionError)
    })
  }
})
