// Adversarial review of the transcript guards: the model writes the tool-call ids and, turn after turn, the
// transcript's length. Work must stay linear in it, and repair must keep every user message where it was.
import { describe, expect, it } from "vitest"
import { HistoryGuard, MessageValidator } from "../../../src/core/transcript/index.ts"
import { type Msg, openai } from "./builders.ts"

const call = (id: string, n = 0) => ({
  id,
  type: "function",
  function: { name: "lookup", arguments: JSON.stringify({ n }) },
})

// Linear work is asserted by counting reads, not by timing (a loaded machine makes any time budget flaky): every
// call id and tool_call_id is a counting getter, and a quadratic matcher reads them about n times each (16,000
// parallel results took 7 s that way), a linear one a small constant number of times.
let reads = 0
function counted<T extends object>(o: T, key: string): T {
  const v = (o as Record<string, unknown>)[key]
  Object.defineProperty(o, key, {
    enumerable: true,
    configurable: true,
    get() {
      reads++
      return v
    },
  })
  return o
}
const READS_PER_ITEM = 20

describe("HistoryGuard.trim() measures each message once", () => {
  it("trimming 3,000 messages to 50 tokenizes each message a bounded number of times", () => {
    let calls = 0
    const tokenizer = (text: string) => {
      calls++
      return Math.ceil(text.length / 4)
    }
    const history = Array.from({ length: 3_000 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `message ${i}`,
    }))
    const byCount = new HistoryGuard({ maxMessages: 50, tokenizer }).trim(history)
    expect(byCount).toEqual(history.slice(-50))
    // Quadratic before: every drop re-estimated the whole history (about 4.5 million calls here).
    expect(calls).toBeLessThanOrEqual(3 * history.length)
    calls = 0
    const guard = new HistoryGuard({ maxTokens: 500, tokenizer })
    const byTokens = guard.trim(history)
    expect(calls).toBeLessThanOrEqual(3 * history.length)
    expect(guard.estimateTokens(byTokens)).toBeLessThanOrEqual(500)
    // The largest suffix that fits: one more (older) message would not.
    const older = history.slice(-(byTokens.length + 2))
    expect(guard.estimateTokens(older)).toBeGreaterThan(500)
    expect(byTokens).toEqual(history.slice(-byTokens.length))
  })

  it("never splits a call from its results, at any limit", () => {
    const b = openai
    const history: Msg[] = [...b.system("sys"), b.user("start")]
    for (let i = 0; i < 40; i++) {
      const calls = [
        { id: `c${i}a`, name: "f" },
        { id: `c${i}b`, name: "f" },
      ]
      history.push(b.assistant("", calls), ...b.results(calls.map((c) => ({ id: c.id, text: `r ${c.id}` }))))
    }
    const validator = new MessageValidator()
    for (let max = 4; max < history.length; max += 7) {
      const trimmed = new HistoryGuard({ maxMessages: max }).trim(history)
      expect(trimmed.length).toBeLessThanOrEqual(max)
      expect(validator.check(trimmed)).toEqual([])
      expect(trimmed[0]).toEqual(history[0])
    }
  })

  it("warnAt fires at the boundary and maxTokens itself still passes", () => {
    const history = [
      { role: "user", content: "x".repeat(400) },
      { role: "assistant", content: "y".repeat(400) },
    ]
    const tokens = new HistoryGuard().estimateTokens(history)
    const events: unknown[] = []
    new HistoryGuard({ maxTokens: tokens, warnAt: 1, onEvent: (e) => events.push(e) }).validate(history)
    expect(events).toEqual([
      { type: "history_near_limit", estimatedTokens: tokens, maxTokens: tokens, pct: 1 },
    ])
    expect(() => new HistoryGuard({ maxTokens: tokens - 1 }).validate(history)).toThrow(
      expect.objectContaining({ reason: "token_limit" }),
    )
  })
})

describe("MessageValidator.repair() on transcripts a model can grow", () => {
  it("16,000 parallel calls answered by 16,000 tool messages repair in linear time", () => {
    const n = 16_000
    const messages: Msg[] = [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: Array.from({ length: n }, (_, i) => counted(call(`c${i}`, i), "id")),
      },
      ...Array.from({ length: n }, (_, i) =>
        counted({ role: "tool", tool_call_id: `c${i}`, content: `r${i}` }, "tool_call_id"),
      ),
    ]
    reads = 0
    const value = new MessageValidator().repair(messages)
    expect(reads).toBeLessThan(READS_PER_ITEM * 2 * n)
    expect(value.report.changed).toBe(false)
    expect(value.messages).toEqual(messages)
  })

  it("a model that names every call 'call_0' gets unique ids, each result stays with its own call, in linear time", () => {
    const n = 16_000
    const messages: Msg[] = [{ role: "user", content: "go" }]
    for (let i = 0; i < n; i++) {
      messages.push(
        { role: "assistant", content: null, tool_calls: [counted(call("call_0", i), "id")] },
        counted({ role: "tool", tool_call_id: "call_0", content: `result ${i}` }, "tool_call_id"),
      )
    }
    const validator = new MessageValidator()
    reads = 0
    const value = validator.repair(messages)
    expect(reads).toBeLessThan(READS_PER_ITEM * 2 * n)
    const out = value.messages
    expect(out).toHaveLength(messages.length)
    expect(validator.check(out)).toEqual([])
    const ids = new Set<string>()
    for (let i = 0; i < n; i++) {
      const a = out[1 + 2 * i] as { tool_calls: { id: string; function: { arguments: string } }[] }
      const t = out[2 + 2 * i] as { tool_call_id: string; content: string }
      const id = a.tool_calls[0]?.id as string
      expect(id).toBe(i === 0 ? "call_0" : `call_0_dup${i}`)
      expect(t.tool_call_id).toBe(id)
      expect(t.content).toBe(`result ${i}`)
      expect(a.tool_calls[0]?.function.arguments).toBe(JSON.stringify({ n: i }))
      ids.add(id)
    }
    expect(ids.size).toBe(n)
    // Repair is idempotent.
    expect(validator.repair(out).messages).toEqual(out)
  })

  it("a renamed duplicate skips an id the model already used for a later call", () => {
    const messages: Msg[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [call("x")] },
      { role: "tool", tool_call_id: "x", content: "first" },
      { role: "assistant", content: null, tool_calls: [call("x")] },
      { role: "tool", tool_call_id: "x", content: "second" },
      { role: "assistant", content: null, tool_calls: [call("x_dup1")] },
      { role: "tool", tool_call_id: "x_dup1", content: "third" },
    ]
    const validator = new MessageValidator()
    const out = validator.repair(messages).messages as Record<string, unknown>[]
    expect(validator.check(out)).toEqual([])
    expect(out.map((m) => m.tool_call_id ?? (m.tool_calls as { id: string }[] | undefined)?.[0]?.id)).toEqual(
      [undefined, "x", "x", "x_dup2", "x_dup2", "x_dup1", "x_dup1"],
    )
    expect(out.filter((m) => m.role === "tool").map((m) => m.content)).toEqual(["first", "second", "third"])
  })

  it("ids named like Object.prototype keys are ordinary ids", () => {
    const ids = ["__proto__", "constructor", "toString", "hasOwnProperty"]
    const messages: Msg[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: ids.map((id) => call(id)) },
      ...ids.map((id) => ({ role: "tool", tool_call_id: id, content: `r ${id}` })),
      { role: "tool", tool_call_id: "valueOf", content: "orphan" },
    ]
    const validator = new MessageValidator()
    expect(validator.check(messages).map((i) => [i.violation, i.toolCallId])).toEqual([
      ["orphaned_tool_result", "valueOf"],
    ])
    const { messages: out, report } = validator.repair(messages)
    expect(report.actions.map((a) => [a.kind, a.toolCallId])).toEqual([["dropped_orphan_result", "valueOf"]])
    expect(out).toEqual(messages.slice(0, -1))
  })

  it("repair keeps every user message, in order, whatever the model did with its calls", () => {
    const messages: Msg[] = [
      { role: "user", content: "u1" },
      { role: "assistant", content: null, tool_calls: [call("a"), call("a"), call("")] },
      { role: "user", content: "u2" },
      { role: "tool", tool_call_id: "a", content: "late" },
      { role: "tool", tool_call_id: "zzz", content: "unknown" },
      { role: "user", content: "u3", tool_call_id: "a" },
      { role: "user", content: "u4" },
    ]
    const validator = new MessageValidator()
    const first = validator.repair(messages).messages
    expect(validator.check(first)).toEqual([])
    // u3 carries a tool_call_id: by the documented rule it is a result in the wrong role, and its text moves
    // into the tool message answering "a". Every other user message stays, in order.
    expect(first.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["u1", "u2", "u4"])
    expect(first.filter((m) => m.role === "tool").map((m) => m.content)).toContain("u3")
    expect(validator.repair(first).messages).toEqual(first)
  })
})
