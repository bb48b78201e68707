import fc from "fast-check"
import { describe, expect, it, vi } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import {
  HistoryDropError,
  HistoryDuplicateTurnsError,
  HistoryGuard,
  HistoryTruncatedError,
  MessageValidationError,
  MessageValidator,
} from "../../../src/core/transcript/index.ts"
import { builders, type Msg, openai } from "./builders.ts"
import { providerViolations } from "./provider-rules.ts"

const convo = (n: number): Msg[] =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `message number ${i}`,
  }))

describe("HistoryGuard", () => {
  it("uses the original's token heuristic by default and accepts a tokenizer", () => {
    const msgs = [
      { role: "user", content: "x".repeat(40) },
      { role: "assistant", content: "" },
    ]
    expect(new HistoryGuard().estimateTokens(msgs)).toBe(3 + (4 + 10) + (4 + 1))
    expect(new HistoryGuard({ tokenizer: (t) => t.length }).estimateTokens(msgs)).toBe(3 + 44 + 4)
  })

  it("raises token_limit and message_count, and warns near the limit", () => {
    const onEvent = vi.fn()
    const msgs = convo(4)
    const tokens = new HistoryGuard().estimateTokens(msgs)
    expect(() => new HistoryGuard({ maxTokens: tokens - 1 }).validate(msgs)).toThrow(
      expect.objectContaining({ reason: "token_limit", code: "history_truncated", estimatedTokens: tokens }),
    )
    expect(() => new HistoryGuard({ maxMessages: 3 }).validate(msgs)).toThrow(
      expect.objectContaining({ reason: "message_count", messageCount: 4 }),
    )
    new HistoryGuard({ maxTokens: tokens, onEvent }).validate(msgs)
    expect(onEvent).toHaveBeenCalledWith(
      expect.objectContaining({ type: "history_near_limit", estimatedTokens: tokens }),
    )
  })

  it("keeps the original's check order, boundaries and message openings", () => {
    const msgs = convo(4) // 4 messages of 16-17 characters: 3 + 4 × (4 + 4) = 35 tokens
    expect(new HistoryGuard().estimateTokens(msgs)).toBe(35)
    const thrown = (guard: HistoryGuard, m: readonly unknown[]) => {
      try {
        guard.validate(m)
      } catch (e) {
        return e as HistoryTruncatedError
      }
      throw new Error("validate() passed")
    }
    // Both limits broken: the token limit is reported first, with the original's wording.
    const both = thrown(new HistoryGuard({ maxTokens: 34, maxMessages: 3 }), msgs)
    expect(both.reason).toBe("token_limit")
    expect(both.message).toMatch(/^Message history would exceed token limit: ~35 estimated tokens > 34 max\./)
    expect(thrown(new HistoryGuard({ maxMessages: 3 }), msgs).message).toMatch(
      /^Message history exceeds max_messages: 4 > 3\./,
    )
    // Near the limit is estimate >= maxTokens × warnAt: 35 >= 50 × 0.7 warns, 35 < 50 × 0.71 does not.
    const onEvent = vi.fn()
    new HistoryGuard({ maxTokens: 50, warnAt: 0.7, onEvent }).validate(msgs)
    new HistoryGuard({ maxTokens: 50, warnAt: 0.71, onEvent }).validate(msgs)
    expect(onEvent).toHaveBeenCalledTimes(1)
    const dup = thrown(new HistoryGuard({ detectDuplicates: "anywhere" }), [...msgs, msgs[0], msgs[2]])
    expect(dup.message).toMatch(/^Duplicate turns detected at index\(s\) \[4, 5\]\./)
    const guard = new HistoryGuard()
    guard.validate(msgs)
    const drop = thrown(guard, msgs.slice(1))
    expect(drop.message).toMatch(
      /^1 message\(s\) were silently dropped from the history\. Had 4 messages, now have 3\./,
    )
  })

  it("flags consecutive duplicate turns only, unless asked for the original's global rule", () => {
    const repeatOk = [
      { role: "user", content: "ok" },
      { role: "assistant", content: "sure" },
      { role: "user", content: "ok" },
    ]
    expect(() => new HistoryGuard().validate(repeatOk)).not.toThrow()
    expect(() => new HistoryGuard({ detectDuplicates: "anywhere" }).validate(repeatOk)).toThrow(
      HistoryDuplicateTurnsError,
    )
    const doubled = [...repeatOk, { role: "user", content: "ok" }]
    const e = (() => {
      try {
        new HistoryGuard().validate(doubled)
      } catch (err) {
        return err as HistoryDuplicateTurnsError
      }
    })()
    expect(e).toBeInstanceOf(HistoryTruncatedError)
    expect(e?.indices).toEqual([3])
    expect(e?.reason).toBe("duplicate_turns")
  })

  it("does not flag parallel tool results with identical content", () => {
    const msgs = [
      openai.assistant("", [
        { id: "c1", name: "ping" },
        { id: "c2", name: "ping" },
      ]),
      ...openai.results([
        { id: "c1", text: "up" },
        { id: "c2", text: "up" },
      ]),
    ]
    expect(() => new HistoryGuard().validate(msgs)).not.toThrow()
  })

  it("detects messages dropped between calls, but not additions or its own trims", () => {
    const guard = new HistoryGuard({ maxMessages: 6 })
    const msgs = convo(6)
    guard.validate(msgs)
    guard.validate([...msgs, { role: "user", content: "new" }].slice(0, 6))
    expect(() => guard.validate(msgs.slice(2))).toThrow(HistoryDropError)
    guard.reset()
    guard.validate(convo(6))
    const trimmed = guard.trim([
      ...convo(6),
      { role: "user", content: "more" },
      { role: "assistant", content: "x" },
    ])
    expect(() => guard.validate(trimmed)).not.toThrow()
    expect(() => new HistoryGuard().checkForDrops(msgs)).toThrow(/before validate/)
  })

  it("trim() keeps system messages and drops the oldest turns", () => {
    const msgs = [{ role: "system", content: "rules" }, ...convo(10)]
    const out = new HistoryGuard({ maxMessages: 5 }).trim(msgs)
    expect(out).toEqual([msgs[0], ...msgs.slice(-4)])
  })

  it("trim() keeps an Anthropic call with its result when the messages carry a blank tool_call_id column", () => {
    const row = (m: Msg): Msg => ({ ...m, tool_call_id: null })
    const msgs = [
      row({ role: "user", content: "pay it" }),
      row({ role: "assistant", content: [{ type: "tool_use", id: "t1", name: "pay", input: { n: 1 } }] }),
      row({ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "paid" }] }),
      row({ role: "assistant", content: "Paid." }),
      row({ role: "user", content: "thanks" }),
    ]
    const out = new HistoryGuard({ maxMessages: 3 }).trim(msgs)
    // Read as OpenAI, the tool_use left alone and its tool_result stayed first: Anthropic refuses the orphan.
    const sent = out.map(({ tool_call_id: _, ...m }) => m) // the store's column, not the message
    expect(providerViolations("anthropic", sent)).toEqual([])
    expect(out).toEqual(msgs.slice(4))
  })

  it("trim() refuses when the system prompt and the latest turn alone are over the limit", () => {
    const msgs = [
      { role: "system", content: "x".repeat(400) },
      { role: "user", content: "hi" },
    ]
    expect(() => new HistoryGuard({ maxTokens: 50 }).trim(msgs)).toThrow(
      expect.objectContaining({ reason: "cannot_fit" }),
    )
  })

  it("trim() never leaves an answer whose question it dropped, even when the format cannot be detected", () => {
    // fast-check's counterexample (seed 1203871854): four text-only turns, 40 tokens. Text-only Anthropic turns
    // look like OpenAI ones, and the trimmed history started with an assistant message, which Anthropic refuses.
    const msgs = Array.from({ length: 4 }, () => [
      { role: "user", content: "q" },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
    ]).flat()
    const out = new HistoryGuard({ maxTokens: 40 }).trim(msgs)
    expect(out.length).toBeLessThan(msgs.length)
    expect(out[0]?.role).toBe("user")
    expect(out).toEqual(msgs.slice(msgs.length - out.length))
    // Nothing to drop: an assistant-first history that fits is returned as it is.
    const greeting = [
      { role: "assistant", content: "hello" },
      { role: "user", content: "hi" },
    ]
    expect(new HistoryGuard({ maxTokens: 400 }).trim(greeting)).toEqual(greeting)
  })

  for (const b of builders) {
    it(`trim() keeps every tool call with its results and stays under the limit (${b.format}, property)`, () => {
      const turn = fc.record({
        text: fc.string({ maxLength: 80 }),
        calls: fc.integer({ min: 0, max: 3 }),
        resultSize: fc.integer({ min: 0, max: 200 }),
      })
      fc.assert(
        fc.property(
          fc.array(turn, { minLength: 1, maxLength: 12 }),
          fc.integer({ min: 40, max: 800 }),
          (turns, maxTokens) => {
            let id = 0
            const msgs: Msg[] = [...b.system("be brief")]
            for (const t of turns) {
              msgs.push(b.user(t.text || "q"))
              const calls = Array.from({ length: t.calls }, () => ({ id: `call_${id++}`, name: "search" }))
              // An empty assistant turn is refused by OpenAI and Anthropic alike: not a trim concern.
              msgs.push(b.assistant(t.text || (calls.length ? "" : "ok"), calls))
              if (calls.length)
                msgs.push(...b.results(calls.map((c) => ({ id: c.id, text: "r".repeat(t.resultSize) }))))
            }
            const guard = new HistoryGuard({ maxTokens })
            let out: Msg[]
            try {
              out = guard.trim(msgs)
            } catch (e) {
              expect((e as HistoryTruncatedError).reason).toBe("cannot_fit")
              return
            }
            expect(guard.estimateTokens(out)).toBeLessThanOrEqual(maxTokens)
            expect(new MessageValidator({ format: b.format }).check(out)).toEqual([])
            expect(providerViolations(b.format, out)).toEqual([])
            expect(out.slice(0, b.system("x").length)).toEqual(msgs.slice(0, b.system("x").length))
            if (b.format === "anthropic" && out.length > 0) expect(out[0]?.role).toBe("user")
          },
        ),
        { numRuns: 300 },
      )
    })
  }
})

describe("HistoryGuard: legacy function calls and text documents", () => {
  // Grouped by tool_calls alone, trim() kept the `function` result and dropped the call it answers.
  it("trim() keeps a legacy function_call with the `function` result after it", () => {
    const msgs = [
      { role: "system", content: "s" },
      { role: "user", content: "u1" },
      { role: "assistant", content: null, function_call: { name: "lookup", arguments: '{"id":"1"}' } },
      { role: "function", name: "lookup", content: "result of lookup" },
      { role: "user", content: "u2" },
      { role: "assistant", content: "a2" },
    ]
    expect(new HistoryGuard({ maxMessages: 4 }).trim(msgs)).toEqual([msgs[0], msgs[4], msgs[5]])
    expect(new HistoryGuard({ maxMessages: 5 }).trim(msgs)).toEqual([
      msgs[0],
      msgs[2],
      msgs[3],
      msgs[4],
      msgs[5],
    ])
  })

  // A 400 KB document counted 9 tokens.
  it("counts documents given as text: Anthropic text and content sources, AI SDK text files", () => {
    const doc = "x".repeat(40_000)
    const guard = new HistoryGuard({ maxTokens: 1_000 })
    const blocks = [
      { type: "document", source: { type: "text", media_type: "text/plain", data: doc } },
      { type: "document", source: { type: "content", content: [{ type: "text", text: doc }] } },
      { type: "file", mediaType: "text/plain", data: doc },
      { type: "file", mimeType: "text/csv", data: doc },
    ]
    for (const block of blocks) {
      const history = [{ role: "user", content: [block, { type: "text", text: "summarize" }] }]
      expect(guard.estimateTokens(history), JSON.stringify(block).slice(0, 80)).toBeGreaterThan(10_000)
      expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
    }
    // Binary stays keyed, not counted: a PDF's base64 is no text the model reads as written.
    const pdf = [{ type: "document", source: { type: "base64", media_type: "application/pdf", data: doc } }]
    expect(guard.estimateTokens([{ role: "user", content: pdf }])).toBeLessThan(20)
  })
})

describe("HistoryGuard on content nested deep or holding itself", () => {
  // A tool_result inside a tool_result: the text of every level, then the innermost.
  const nested = (content: unknown): Msg[] => [
    { role: "user", content: "q" },
    { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
    { role: "user", content },
  ]
  const deep = (depth: number): Msg[] => {
    let c: unknown = "leaf"
    for (let i = 0; i < depth; i++)
      c = [
        { type: "text", text: "ab" },
        { type: "tool_result", tool_use_id: "t1", content: c },
      ]
    return nested(c)
  }

  it("reads 20,000 levels of content without overflowing the stack, and counts every level", () => {
    const depth = 20_000
    const messages = deep(depth)
    const guard = new HistoryGuard({ maxTokens: 1_000_000 })
    // "ab ab ... leaf": 3 characters a level and 4 for the leaf; the other two messages count 5 each.
    expect(guard.estimateTokens(messages)).toBe(3 + 5 + 5 + 4 + Math.floor((3 * depth + 4) / 4))
    expect(guard.validate(messages)).toBe(messages)
    expect(() => guard.checkForDrops(messages.slice(0, 2))).toThrow(HistoryDropError)
    expect(
      new HistoryGuard({ maxMessages: 1 }).trim([...messages, { role: "user", content: "next" }]),
    ).toEqual([{ role: "user", content: "next" }])
  })

  it("refuses content holding itself with the validator's invalid_message, from every method", () => {
    const blocks: unknown[] = []
    blocks.push({ type: "tool_result", tool_use_id: "t1", content: blocks }, { type: "text", text: "a" })
    const messages = nested(blocks)
    expect(new MessageValidator().check(messages)).toEqual([
      expect.objectContaining({ violation: "invalid_message", messageIndex: 2 }),
    ])
    const guard = new HistoryGuard()
    const refused = expect.objectContaining({
      violation: "invalid_message",
      messageIndex: 2,
      message: expect.stringMatching(/^Message 2 holds a cycle .*invalidMessages: "drop"/),
    })
    for (const call of [
      () => guard.estimateTokens(messages),
      () => guard.validate(messages),
      () => guard.trim(messages),
      () => guard.accept(messages),
    ]) {
      expect(call).toThrow(MessageValidationError)
      expect(call).toThrow(refused)
    }
    guard.accept(messages.slice(0, 2))
    expect(() => guard.checkForDrops(messages)).toThrow(refused)
  })

  it("refuses tool input holding itself too, shallow or below 20,000 levels", () => {
    const shallow: Msg = { q: 1 }
    shallow.self = shallow
    let deepest: Msg = {}
    const root = deepest
    for (let i = 0; i < 20_000; i++) {
      const next: Msg = {}
      deepest.x = next
      deepest = next
    }
    deepest.back = root
    for (const input of [shallow, root]) {
      const messages: Msg[] = [
        { role: "user", content: "q" },
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "f", input }] },
      ]
      expect(() => new HistoryGuard().validate(messages)).toThrow(
        expect.objectContaining({ violation: "invalid_message", messageIndex: 1 }),
      )
    }
  })

  it("reads OpenAI arguments given as an object as their JSON, and refuses one holding itself", () => {
    const call = (args: unknown): Msg[] => [
      { role: "user", content: "q" },
      {
        role: "assistant",
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: args } }],
      },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ]
    const big = { blob: "x".repeat(100_000) }
    // As "[object Object]" 100 KB of arguments counted a few tokens, unseen by maxTokens.
    const guard = new HistoryGuard({ format: "openai" })
    expect(guard.estimateTokens(call(big))).toBe(guard.estimateTokens(call(JSON.stringify(big))))
    const self: Msg = { q: 1 }
    self.self = self
    expect(() => guard.validate(call(self))).toThrow(
      expect.objectContaining({ violation: "invalid_message", messageIndex: 1 }),
    )
  })
})

describe("HistoryGuard refuses what JavaScript callers can pass by mistake with typed errors", () => {
  it("an unknown format, when it is built", () => {
    for (const format of ["gemini", null, "toString", 1]) {
      const make = () => new HistoryGuard({ format } as never)
      expect(make).toThrow(InvalidOptionError)
      expect(make).toThrow(/^HistoryGuard: format must be one of auto,openai,anthropic,ai-sdk, got /)
    }
    for (const format of ["auto", "openai", "anthropic", "ai-sdk", undefined] as const)
      expect(new HistoryGuard({ format }).trim([{ role: "user", content: "q" }])).toHaveLength(1)
  })

  it("a transcript that is not an array", () => {
    const guard = new HistoryGuard()
    for (const messages of [null, undefined, { role: "user", content: "q" }]) {
      for (const call of [
        () => guard.validate(messages as never),
        () => guard.estimateTokens(messages as never),
        () => guard.trim(messages as never),
        () => guard.accept(messages as never),
        () => guard.checkForDrops(messages as never),
      ]) {
        expect(call).toThrow(InvalidOptionError)
        expect(call).toThrow(/^HistoryGuard: pass the messages as an array, got /)
      }
    }
  })
})
