// Gaps left by the HistoryGuard fixes of stop 41 (BigInt and legacy function_call): each test failed before its fix.
import { describe, expect, it } from "vitest"
import { HistoryGuard } from "../../../src/core/transcript/index.ts"

describe("function_call next to a tool_calls array", () => {
  // function_call was read only when tool_calls was not an array. A serializer that always writes `tool_calls: []`
  // (the OpenAI adapter's isEmpty() reckons with that shape) made 100 KB of legacy arguments count as nothing.
  it("an empty tool_calls array does not hide a function_call's arguments from the estimate", () => {
    const msg = {
      role: "assistant",
      content: null,
      tool_calls: [],
      function_call: { name: "search", arguments: JSON.stringify({ q: "x".repeat(100_000) }) },
    }
    expect(new HistoryGuard().estimateTokens([msg])).toBeGreaterThan(25_000)
  })

  it("a 100 KB function_call next to one tool call is counted too", () => {
    const msg = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "a", arguments: "{}" } }],
      function_call: { name: "search", arguments: "x".repeat(100_000) },
    }
    expect(new HistoryGuard().estimateTokens([msg])).toBeGreaterThan(25_000)
  })

  it("two messages that differ only in their function_call are not duplicates", () => {
    const call = (q: string) => ({
      role: "assistant",
      content: null,
      tool_calls: [],
      function_call: { name: "search", arguments: JSON.stringify({ q }) },
    })
    expect(() => new HistoryGuard().validate([call("cats"), call("dogs")])).not.toThrow()
  })
})

describe("a BigInt in a media part", () => {
  // The media key's JSON.stringify had no bigint replacer: it threw and the key was "", so two different files were
  // one turn and validate() refused a valid history as a duplicate.
  it("two different files with a bigint field are not duplicates", () => {
    const file = (url: string) => ({
      role: "user",
      content: [{ type: "file", data: url, mediaType: "application/pdf", size: 1234n }],
    })
    expect(() =>
      new HistoryGuard().validate([file("https://a/1.pdf"), file("https://a/2.pdf")]),
    ).not.toThrow()
  })

  it("the same file twice in a row is still a duplicate", () => {
    const file = { role: "user", content: [{ type: "file", data: "https://a/1.pdf", size: 1234n }] }
    expect(() => new HistoryGuard().validate([file, { ...file }])).toThrow(/Duplicate turns/)
  })
})
