// HistoryGuard's estimate left out text the model wrote itself, which the provider bills as input when it is sent
// back: a 400 KB Anthropic thinking block (kept in a tool-use loop) or OpenAI refusal counted 0 tokens and passed
// maxTokens: 10,000. Each test failed before the fix.
import { describe, expect, it } from "vitest"
import { HistoryGuard, HistoryTruncatedError } from "../../../src/core/transcript/index.ts"

const big = "x".repeat(400_000) // 100,000 tokens by the guard's heuristic
const guard = new HistoryGuard({ maxTokens: 10_000 })
const loop = (block: Record<string, unknown>) => [
  { role: "user", content: "q" },
  { role: "assistant", content: [block, { type: "tool_use", id: "t1", name: "f", input: {} }] },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
]

describe("HistoryGuard maxTokens counts what the model wrote, shown or not", () => {
  it.each([
    ["an Anthropic thinking block", { type: "thinking", thinking: big, signature: "sig" }],
    ["an Anthropic redacted_thinking block's data", { type: "redacted_thinking", data: big }],
  ])("%s of 400 KB counts", (_, block) => {
    const history = loop(block)
    expect(guard.estimateTokens(history)).toBeGreaterThan(100_000)
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
  })

  it("an OpenAI assistant refusal of 400 KB counts", () => {
    const history = [
      { role: "user", content: "q" },
      { role: "assistant", content: null, refusal: big },
      { role: "user", content: "again" },
    ]
    expect(guard.estimateTokens(history)).toBeGreaterThan(100_000)
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
  })

  it("a web search result's encrypted page counts by its length", () => {
    const history = [
      { role: "user", content: "q" },
      {
        role: "assistant",
        content: [
          { type: "server_tool_use", id: "s1", name: "web_search", input: { query: "q" } },
          {
            type: "web_search_tool_result",
            tool_use_id: "s1",
            content: [{ type: "web_search_result", url: "https://x", title: "x", encrypted_content: big }],
          },
        ],
      },
    ]
    expect(guard.estimateTokens(history)).toBeGreaterThan(100_000)
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
  })

  it("two refusals that differ are two turns, not a duplicate", () => {
    const refusal = (text: string) => ({ role: "assistant", content: null, refusal: text })
    const history = [{ role: "user", content: "q" }, refusal("I can't help with that."), refusal("No.")]
    expect(() => new HistoryGuard({ detectDuplicates: "anywhere" }).validate(history)).not.toThrow()
  })
})
