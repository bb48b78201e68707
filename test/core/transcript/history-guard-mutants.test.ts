// Behaviours of HistoryGuard that mutation testing found unguarded: each test names what a wrong change would break.
import { describe, expect, it } from "vitest"
import {
  HistoryDropError,
  HistoryDuplicateTurnsError,
  type HistoryEvent,
  HistoryGuard,
  HistoryTruncatedError,
} from "../../../src/core/transcript/index.ts"
import { aiSdk, anthropic, type Msg, openai } from "./builders.ts"

const convo = (n: number): Msg[] =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `message number ${i}`,
  }))

function thrown(run: () => unknown): unknown {
  try {
    run()
  } catch (e) {
    return e
  }
  throw new Error("expected a throw")
}

describe("HistoryGuard limits and events", () => {
  it("warns from 90% of maxTokens by default, with the fraction used", () => {
    const msgs = convo(4) // 35 tokens
    const events: HistoryEvent[] = []
    const onEvent = (e: HistoryEvent) => events.push(e)
    new HistoryGuard({ maxTokens: 40, onEvent }).validate(msgs) // 35 < 36
    expect(events).toEqual([])
    new HistoryGuard({ maxTokens: 38, onEvent }).validate(msgs) // 35 >= 34.2
    expect(events).toEqual([{ type: "history_near_limit", estimatedTokens: 35, maxTokens: 38, pct: 35 / 38 }])
  })

  it("trim() keeps a history whose estimate is exactly maxTokens, and reports no trim", () => {
    const msgs = convo(4)
    const tokens = new HistoryGuard().estimateTokens(msgs)
    const events: HistoryEvent[] = []
    const out = new HistoryGuard({ maxTokens: tokens, onEvent: (e) => events.push(e) }).trim(msgs)
    expect(out).toEqual(msgs)
    expect(events).toEqual([])
  })

  it("trim() reports how many messages it removed and the tokens left", () => {
    const msgs = [{ role: "system", content: "rules" }, ...convo(10)]
    const events: HistoryEvent[] = []
    const guard = new HistoryGuard({ maxMessages: 5, onEvent: (e) => events.push(e) })
    const out = guard.trim(msgs)
    expect(out).toHaveLength(5)
    expect(events).toEqual([
      { type: "history_trimmed", removed: 6, estimatedTokens: guard.estimateTokens(out) },
    ])
  })

  it("trim() refuses, rather than dropping it, a latest turn that alone is over the limit", () => {
    const system = { role: "system", content: "rules" }
    const long = [system, { role: "user", content: "x".repeat(400) }]
    const e = thrown(() => new HistoryGuard({ maxTokens: 50 }).trim(long)) as HistoryTruncatedError
    expect(e).toBeInstanceOf(HistoryTruncatedError)
    expect(e.reason).toBe("cannot_fit")
    // The error reports what is left: the system message and the latest turn.
    expect(e.messageCount).toBe(2)
    expect(e.estimatedTokens).toBe(new HistoryGuard().estimateTokens(long))
    const two = [system, ...convo(3)]
    expect(() => new HistoryGuard({ maxMessages: 1 }).trim(two)).toThrow(
      expect.objectContaining({ reason: "cannot_fit", messageCount: 2 }),
    )
  })
})

describe("HistoryGuard duplicate detection modes", () => {
  const doubled = [
    { role: "user", content: "hi" },
    { role: "assistant", content: "hello" },
    { role: "assistant", content: "hello" },
  ]

  it("detectDuplicates: true flags back-to-back copies like the default", () => {
    expect(() => new HistoryGuard({ detectDuplicates: true }).validate(doubled)).toThrow(
      HistoryDuplicateTurnsError,
    )
  })

  it("detectDuplicates: false flags nothing", () => {
    expect(new HistoryGuard({ detectDuplicates: false }).validate(doubled)).toBe(doubled)
  })

  it("a retried call with a new id is not the same turn, even for the 'anywhere' rule", () => {
    const call = (id: string) => [
      openai.assistant("", [{ id, name: "search", args: { q: 1 } }]),
      ...openai.results([{ id, text: "r" }]),
    ]
    const msgs = [openai.user("q"), ...call("c1"), ...call("c2")]
    expect(() => new HistoryGuard({ detectDuplicates: "anywhere" }).validate(msgs)).not.toThrow()
  })

  it("results with the same text answer different calls: no duplicate (Anthropic tool_use_id, AI SDK toolCallId)", () => {
    for (const b of [anthropic, aiSdk]) {
      const turn = (id: string, n: number) => [
        b.assistant("", [{ id, name: "ping", args: { n } }]),
        ...b.results([{ id, text: "up" }]),
      ]
      const msgs = [b.user("q"), ...turn("c1", 1), ...turn("c2", 2)]
      expect(() => new HistoryGuard({ detectDuplicates: "anywhere" }).validate(msgs)).not.toThrow()
    }
    // AI SDK results of one step in tool messages of their own, back to back.
    const parallel = [
      aiSdk.user("q"),
      aiSdk.assistant("", [
        { id: "c1", name: "ping" },
        { id: "c2", name: "ping" },
      ]),
      ...aiSdk.results([{ id: "c1", text: "up" }]),
      ...aiSdk.results([{ id: "c2", text: "up" }]),
    ]
    expect(() => new HistoryGuard().validate(parallel)).not.toThrow()
  })

  it("messages given as strings or with a `type` instead of a role are told apart", () => {
    expect(() => new HistoryGuard().validate(["first question", "second question"])).not.toThrow()
    expect(() =>
      new HistoryGuard().validate([
        { type: "human", content: "ok" },
        { type: "ai", content: "ok" },
      ]),
    ).not.toThrow()
  })
})

describe("HistoryGuard drop detection", () => {
  it("detectDrops: false lets messages go", () => {
    const guard = new HistoryGuard({ detectDrops: false })
    guard.validate(convo(4))
    expect(() => guard.validate(convo(4).slice(2))).not.toThrow()
  })

  it("counts repeats: one of two identical turns removed is a drop, and an addition does not hide a drop", () => {
    const ok = { role: "user", content: "ok" }
    const sure = { role: "assistant", content: "sure" }
    const guard = new HistoryGuard()
    guard.validate([ok, sure, ok])
    const e = thrown(() => guard.validate([ok, sure])) as HistoryDropError
    expect(e).toBeInstanceOf(HistoryDropError)
    expect(e.dropped).toBe(1)
    const other = new HistoryGuard()
    other.validate([ok, sure])
    // "sure" went missing while a second "ok" came in: still one message dropped.
    expect(() => other.validate([ok, { role: "assistant", content: "fine" }, ok])).toThrow(
      expect.objectContaining({ code: "history_dropped", dropped: 1 }),
    )
  })

  it("reports the number dropped, and checkForDrops() the tokens of the history it checked", () => {
    const msgs = convo(6)
    const guard = new HistoryGuard()
    guard.validate(msgs)
    const left = msgs.slice(2)
    const e = thrown(() => guard.checkForDrops(left)) as HistoryDropError
    expect(e.dropped).toBe(2)
    expect(e.messageCount).toBe(4)
    expect(e.estimatedTokens).toBe(guard.estimateTokens(left))
  })

  it("accept() replaces the baseline, and reset() forgets it", () => {
    const msgs = convo(6)
    const guard = new HistoryGuard()
    guard.validate(msgs)
    const summary = [{ role: "user", content: "summary of turns 0-3" }, ...msgs.slice(4)]
    guard.accept(summary)
    expect(guard.validate(summary)).toBe(summary)
    expect(() => guard.validate(msgs.slice(4))).toThrow(HistoryDropError)
    guard.reset()
    expect(() => guard.checkForDrops(msgs)).toThrow(/before validate/)
    guard.validate(msgs)
    guard.reset()
    expect(() => guard.validate(msgs.slice(3))).not.toThrow()
  })
})

describe("HistoryGuard token estimate reads every kind of payload", () => {
  const big = "x".repeat(4000)

  it("uses ⌊len/4⌋ for a length that is not a multiple of 4, and counts a plain string message", () => {
    expect(new HistoryGuard().estimateTokens([{ role: "user", content: "x".repeat(43) }])).toBe(3 + 4 + 10)
    expect(new HistoryGuard().estimateTokens(["x".repeat(40)])).toBe(3 + 4 + 10)
  })

  it("counts the tool's name with its arguments", () => {
    const msg = openai.assistant("", [{ id: "c1", name: "n".repeat(400), rawArgs: "{}" }])
    // Text "<name> {}": 403 characters.
    expect(new HistoryGuard().estimateTokens([msg])).toBe(3 + 4 + Math.floor(403 / 4))
  })

  it("counts tool input and results in each of their fields (input, args, output, result)", () => {
    for (const key of ["input", "args", "output", "result"]) {
      const msg = {
        role: "tool",
        content: [{ type: "tool-result", toolCallId: "c1", toolName: "f", [key]: { big } }],
      }
      expect(new HistoryGuard().estimateTokens([msg])).toBeGreaterThanOrEqual(1000)
      expect(() => new HistoryGuard({ maxTokens: 500 }).validate([msg])).toThrow(
        expect.objectContaining({ reason: "token_limit" }),
      )
    }
  })

  it("content arrays shared by two blocks are no cycle", () => {
    const shared = [{ type: "text", text: "r".repeat(40) }]
    const msgs: Msg[] = [
      anthropic.user("q"),
      anthropic.assistant("", [
        { id: "t1", name: "f" },
        { id: "t2", name: "f" },
      ]),
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: shared },
          { type: "tool_result", tool_use_id: "t2", content: shared },
        ],
      },
    ]
    const guard = new HistoryGuard()
    // "rrr… rrr…": 81 characters.
    expect(guard.estimateTokens(msgs.slice(2))).toBe(3 + 4 + 20)
    expect(guard.validate(msgs)).toBe(msgs)
  })

  describe("tool input nested too deep for JSON.stringify", () => {
    const depth = 20_000
    const brackets = `${"[".repeat(depth)}${"]".repeat(depth)}`
    const useOf = (input: unknown): Msg => ({
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "f", input }],
    })

    it("counts keys, brackets and values as the JSON text would", () => {
      const key = "k".repeat(4000)
      const input = JSON.parse(`{"${key}": 1, "d": ${brackets}}`)
      const text = `{"${key}":1,"d":${brackets}}`
      expect(new HistoryGuard().estimateTokens([useOf(input)])).toBe(3 + 4 + Math.floor(text.length / 4))
    })

    it("an object shared by two branches is no cycle, and a BigInt is read as its digits", () => {
      const shared = { v: 1 }
      const input = { d: JSON.parse(brackets), a: shared, b: shared, n: 12345678901234567890n }
      // In quotes, as JSON.stringify's replacer writes it in shallow input, so both count the same.
      const text = `{"d":${brackets},"a":{"v":1},"b":{"v":1},"n":"12345678901234567890"}`
      expect(new HistoryGuard().estimateTokens([useOf(input)])).toBe(3 + 4 + Math.floor(text.length / 4))
    })
  })
})
