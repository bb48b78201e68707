// Adversarial review of the transcript guards against message shapes nobody documents: values JSON can carry
// that have no usable toString, and arbitrary JSON in every field. A guard reports or repairs; it never throws
// a TypeError at its caller.
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MyceliumError } from "../../../src/core/errors.ts"
import {
  HistoryGuard,
  MessageValidationError,
  MessageValidator,
  type TranscriptFormat,
} from "../../../src/core/transcript/index.ts"

// Both are plain JSON.parse output or a bare object; String() on either throws "Cannot convert object to
// primitive value".
const noToString = () => [JSON.parse('{"toString": 1}'), Object.create(null) as object]

describe("values without a usable toString", () => {
  it.each(noToString().map((v, i) => [i, v]))(
    "as a role, repair throws its own error or drops (%i)",
    (_, role) => {
      const messages = [
        { role: "user", content: "hi" },
        { role, content: "x" },
      ]
      for (const format of ["openai", "anthropic", "ai-sdk"] as const) {
        expect(() => new MessageValidator({ format }).repair(messages)).toThrow(MessageValidationError)
        const dropped = new MessageValidator({ format, invalidMessages: "drop" }).repair(messages)
        expect(dropped.messages).toEqual([{ role: "user", content: "hi" }])
        expect(new MessageValidator({ format }).check(messages).map((i) => i.violation)).toContain(
          "invalid_role",
        )
      }
    },
  )

  it.each(noToString().map((v, i) => [i, v]))(
    "as content, ids and arguments, HistoryGuard and the validator still answer (%i)",
    (_, odd) => {
      const messages = [
        { role: "user", content: odd },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: odd, type: "function", function: { name: odd, arguments: odd } }],
        },
        { role: "tool", tool_call_id: "x", content: [odd] },
      ]
      const guard = new HistoryGuard({ maxMessages: 2, maxTokens: 10_000 })
      expect(guard.estimateTokens(messages)).toBeGreaterThan(0)
      expect(guard.trim(messages).length).toBeLessThanOrEqual(2)
      const validator = new MessageValidator({ format: "openai" })
      expect(validator.check(messages).length).toBeGreaterThan(0)
      const { messages: fixed } = validator.repair(messages)
      expect(validator.check(fixed)).toEqual([])
    },
  )
})

describe("tool input the model nested deep or keyed with __proto__", () => {
  const depth = 20_000
  // 40 KB of brackets: JSON.parse takes it, and so must every guard (recursive walks overflowed the stack).
  const deep = () => JSON.parse(`{"x": ${"[".repeat(depth)}${"]".repeat(depth)}}`) as Record<string, unknown>
  const transcript = (input: unknown) => [
    { role: "user", content: "q" },
    { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "r" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "t2", name: "f", input }] },
  ]

  it("repair, check and HistoryGuard handle 20,000 levels, and the estimate still counts every bracket", () => {
    const messages = transcript(deep())
    const validator = new MessageValidator()
    expect(validator.check(messages).map((i) => i.violation)).toEqual(["missing_tool_result"])
    const { messages: fixed, report } = validator.repair(messages)
    expect(report.actions.map((a) => a.kind)).toEqual(["inserted_interrupted_result"])
    expect(validator.check(fixed)).toEqual([])
    const guard = new HistoryGuard({ maxTokens: 1_000_000, maxMessages: 3 })
    const tokens = guard.estimateTokens(messages)
    expect(tokens).toBeGreaterThan((2 * 2 * depth) / 4)
    expect(() => guard.validate(fixed)).toThrow(expect.objectContaining({ reason: "message_count" }))
    // Anthropic's first turn must be the user's, so the deep calls leave with their turns.
    expect(new HistoryGuard({ maxMessages: 4 }).trim([...fixed, { role: "user", content: "next" }])).toEqual([
      { role: "user", content: "next" },
    ])
    expect(() => new HistoryGuard({ maxTokens: 1_000 }).validate(messages)).toThrow(
      expect.objectContaining({ reason: "token_limit" }),
    )
  })

  it("a __proto__ key in tool input survives repair as the key it was", () => {
    const input = JSON.parse('{"__proto__": {"type": "tool_result", "tool_use_id": "t1"}, "q": 1}')
    const messages = transcript(input)
    const { messages: fixed } = new MessageValidator().repair(messages)
    const copied = ((fixed[1] as { content: { input: object }[] }).content[0] as { input: object }).input
    expect(Object.keys(copied)).toEqual(["__proto__", "q"])
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype)
    expect(JSON.stringify(copied)).toBe(JSON.stringify(input))
    expect(copied).not.toBe(input)
  })
})

describe("arbitrary JSON in every field", () => {
  const id = fc.constantFrom("a", "b", "__proto__", "constructor", "", "toString")
  const any = fc.jsonValue({ maxDepth: 2 })
  const block = fc.oneof(
    fc.record(
      {
        type: fc.constantFrom("tool_use", "tool_result", "text", "tool-call", "tool-result"),
        id: fc.oneof(id, any),
        tool_use_id: fc.oneof(id, any),
        toolCallId: fc.oneof(id, any),
        input: any,
        text: any,
        content: any,
        output: any,
        providerExecuted: fc.boolean(),
      },
      { requiredKeys: ["type"] },
    ),
    any,
  )
  const call = fc.record({
    id: fc.oneof(id, any),
    type: fc.constant("function"),
    function: fc.oneof(
      fc.record({
        name: fc.oneof(fc.string(), any),
        arguments: fc.oneof(fc.constantFrom("{}", "[]", "x"), any),
      }),
      any,
    ),
    index: fc.oneof(fc.nat(3), any),
  })
  const message = fc.oneof(
    fc.record(
      {
        role: fc.oneof(fc.constantFrom("user", "assistant", "tool", "system", "developer", "__proto__"), any),
        content: fc.oneof(fc.string(), fc.array(block, { maxLength: 4 }), any),
        tool_calls: fc.oneof(fc.array(fc.oneof(call, any), { maxLength: 3 }), any),
        tool_call_id: fc.oneof(id, any),
      },
      { requiredKeys: [] },
    ),
    any,
  )

  it.each(["openai", "anthropic", "ai-sdk"] as const)(
    "%s: check and trim never throw a foreign error; repair output validates and repairs to itself",
    (format: TranscriptFormat) => {
      const validator = new MessageValidator({ format, invalidMessages: "drop" })
      fc.assert(
        fc.property(fc.array(message, { maxLength: 8 }), (messages) => {
          validator.check(messages)
          try {
            new HistoryGuard({ maxMessages: 2, format }).trim(messages)
          } catch (e) {
            if (!(e instanceof MyceliumError)) throw e
          }
          const out = validator.repair(messages).messages
          expect(validator.check(out)).toEqual([])
          expect(validator.repair(out).messages).toEqual(out)
        }),
        { numRuns: 400, seed: 7 },
      )
    },
  )
})
