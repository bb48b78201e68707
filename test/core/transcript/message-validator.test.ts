import { describe, expect, it } from "vitest"
import { detectFormat, MessageValidationError, MessageValidator } from "../../../src/core/transcript/index.ts"

const v = new MessageValidator()

function firstViolation(messages: unknown[], validator = v): MessageValidationError {
  try {
    validator.validate(messages)
  } catch (e) {
    return e as MessageValidationError
  }
  throw new Error("expected a MessageValidationError")
}

describe("MessageValidator (OpenAI artifacts)", () => {
  const call = (id: string, index?: number) => ({
    id,
    type: "function",
    function: { name: "f", arguments: "{}" },
    ...(index === undefined ? {} : { index }),
  })

  it("invalid_role: validate names the roles; repair throws by default or drops on request", () => {
    const msgs = [
      { role: "user", content: "hi" },
      { role: "robot", content: "beep" },
    ]
    const e = firstViolation(msgs)
    expect(e).toMatchObject({ violation: "invalid_role", messageIndex: 1, code: "message_validation" })
    expect(e.reason).toBe(
      "Message 1 has invalid role 'robot'. Expected one of [assistant, developer, function, system, tool, user].",
    )
    expect(() => v.repair(msgs)).toThrow(MessageValidationError)
    const dropped = new MessageValidator({ invalidMessages: "drop" }).repair(msgs)
    expect(dropped.messages).toEqual([msgs[0]])
    expect(dropped.report.actions).toEqual([
      expect.objectContaining({ kind: "dropped_invalid_message", messageIndex: 1 }),
    ])
    expect(() => new MessageValidator({ strictRoles: false }).validate(msgs)).not.toThrow()
  })

  it("parsed_artifact: removes parsed and a null refusal, keeps a real refusal", () => {
    const msgs = [
      { role: "user", content: "q" },
      { role: "assistant", content: "{}", parsed: { a: 1 }, refusal: null },
      { role: "assistant", content: null, parsed: null, refusal: "I can't help with that." },
    ]
    expect(firstViolation(msgs)).toMatchObject({ violation: "parsed_artifact", messageIndex: 1 })
    const { messages } = v.repair(msgs)
    expect(messages[1]).toEqual({ role: "assistant", content: "{}" })
    expect(messages[2]).toEqual({ role: "assistant", content: null, refusal: "I can't help with that." })
    expect(v.check(messages)).toEqual([])
  })

  it("nonzero_tool_call_index: renumbers streamed indices from 0", () => {
    const msgs = [
      { role: "assistant", content: null, tool_calls: [call("call_1", 1), call("call_2", 2)] },
      { role: "tool", tool_call_id: "call_1", content: "a" },
      { role: "tool", tool_call_id: "call_2", content: "b" },
    ]
    expect(firstViolation(msgs)).toMatchObject({ violation: "nonzero_tool_call_index", messageIndex: 0 })
    const out = v.repair(msgs).messages[0] as { tool_calls: { index: number }[] }
    expect(out.tool_calls.map((c) => c.index)).toEqual([0, 1])
  })

  it("duplicate_tool_call_blocks: drops the fc_* copies of call_* calls", () => {
    const msgs = [
      { role: "assistant", content: null, tool_calls: [call("fc_1"), call("call_1")] },
      { role: "tool", tool_call_id: "call_1", content: "a" },
    ]
    expect(firstViolation(msgs)).toMatchObject({ violation: "duplicate_tool_call_blocks" })
    const { messages, report } = v.repair(msgs)
    expect((messages[0] as { tool_calls: { id: string }[] }).tool_calls.map((c) => c.id)).toEqual(["call_1"])
    expect(report.actions.map((a) => a.kind)).toEqual(["dropped_duplicate_call_blocks"])
  })

  it("an id given to a call beside an fc_* call is no fc_/call_ copy: the output validates and repairs to itself", () => {
    const { function: fn } = call("x")
    const msgs = [
      { role: "user", content: "pay both" },
      { role: "assistant", content: null, tool_calls: [{ type: "function", function: fn }, call("fc_1")] },
      { role: "tool", tool_call_id: "fc_1", content: "paid: receipt 42" },
    ]
    const once = v.repair(msgs).messages
    expect((once[1] as { tool_calls: { id: string }[] }).tool_calls.map((c) => c.id)).toEqual([
      "call_missing_1_0",
      "fc_1",
    ])
    expect(v.check(once)).toEqual([])
    expect(v.repair(once)).toMatchObject({ messages: once, report: { changed: false, actions: [] } })
    expect(JSON.stringify(once)).toContain("paid: receipt 42")
  })

  it("missing_tool_call_id: a call without id gets a deterministic id and an interrupted result; an id-less result is dropped", () => {
    const msgs = [
      {
        role: "assistant",
        content: null,
        tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }],
      },
      { role: "tool", content: "who am I for?" },
    ]
    expect(firstViolation(msgs)).toMatchObject({ violation: "missing_tool_call_id", messageIndex: 0 })
    const { messages } = v.repair(msgs)
    expect(messages).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" }, id: "call_missing_0_0" }],
      },
      expect.objectContaining({ role: "tool", tool_call_id: "call_missing_0_0" }),
    ])
  })

  it("empty tool_calls lists are removed (OpenAI rejects them)", () => {
    const msgs = [{ role: "assistant", content: "hi", tool_calls: [] }]
    expect(firstViolation(msgs)).toMatchObject({ violation: "empty_tool_calls" })
    expect(v.repair(msgs).messages).toEqual([{ role: "assistant", content: "hi" }])
  })

  it("a tool_calls entry that is not an object is reported and dropped (the API refuses it)", () => {
    const msgs = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [null, call("c1")] },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ]
    expect(v.check(msgs)).toEqual([
      {
        violation: "invalid_tool_call",
        messageIndex: 1,
        reason: "Message 1 has a tool_calls entry that is not an object.",
      },
    ])
    const { messages, report } = v.repair(msgs)
    expect(report.actions).toEqual([{ kind: "dropped_invalid_tool_call", messageIndex: 1 }])
    expect(messages[1]).toEqual({ role: "assistant", content: null, tool_calls: [call("c1")] })
    expect(v.check(messages)).toEqual([])
    // Nothing left: the list goes, and so does the turn, which then says nothing.
    const only = v.repair([
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [7] },
    ])
    expect(only.messages).toEqual([{ role: "user", content: "go" }])
    expect(only.report.actions.map((a) => a.kind)).toEqual([
      "dropped_invalid_tool_call",
      "removed_empty_tool_calls",
      "dropped_empty_message",
    ])
  })

  it("allowPendingToolCalls accepts unanswered calls in the last message only", () => {
    const pending = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [call("call_1")] },
    ]
    const lenient = new MessageValidator({ allowPendingToolCalls: true })
    expect(lenient.check(pending)).toEqual([])
    expect(lenient.repair(pending).messages).toEqual(pending)
    expect(firstViolation(pending)).toMatchObject({
      violation: "missing_tool_result",
      messageIndex: 1,
      toolCallId: "call_1",
    })
  })
})

describe("MessageValidator (format specifics)", () => {
  it("AI SDK 4 transcripts get a v4-shaped synthetic result", () => {
    const msgs = [
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "a", toolName: "f", args: {} }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "a", toolName: "f", result: 1 }] },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "b", toolName: "g", args: {} }] },
    ]
    const out = v.repair(msgs).messages
    expect(out[3]).toEqual({
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "b",
          toolName: "g",
          result: expect.stringContaining("interrupted"),
          isError: true,
        },
      ],
    })
  })

  it("AI SDK provider-executed calls are not expected to have a tool message", () => {
    const msgs = [
      { role: "user", content: "search" },
      {
        role: "assistant",
        content: [
          { type: "tool-call", toolCallId: "ws", toolName: "web_search", input: {}, providerExecuted: true },
          {
            type: "tool-result",
            toolCallId: "ws",
            toolName: "web_search",
            output: { type: "json", value: [] },
          },
        ],
      },
    ]
    expect(v.check(msgs)).toEqual([])
  })

  it("Anthropic: tool_result blocks are moved before other content", () => {
    const msgs = [
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
      {
        role: "user",
        content: [
          { type: "text", text: "here" },
          { type: "tool_result", tool_use_id: "t1", content: "r" },
        ],
      },
    ]
    expect(firstViolation(msgs)).toMatchObject({ violation: "misplaced_tool_result", messageIndex: 1 })
    expect(v.repair(msgs).messages[1]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: "r" },
        { type: "text", text: "here" },
      ],
    })
  })

  it("Anthropic: a result after other content is moved, and the move is reported, even when another comes first", () => {
    const msgs = [
      { role: "user", content: "x" },
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "a", name: "f", input: {} },
          { type: "tool_use", id: "b", name: "f", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "a", content: "A" },
          { type: "text", text: "hm" },
          { type: "tool_result", tool_use_id: "b", content: "B" },
        ],
      },
    ]
    const { messages, report } = v.repair(msgs)
    expect(messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "a", content: "A" },
      { type: "tool_result", tool_use_id: "b", content: "B" },
      { type: "text", text: "hm" },
    ])
    expect(report.actions).toEqual([
      { kind: "moved_tool_result", messageIndex: 2, detail: "tool results moved before other content" },
    ])
    // Results first already: nothing moves, nothing is reported.
    expect(v.repair(messages).report).toMatchObject({ changed: false, actions: [] })
  })

  it("a message with no content at all that check() accepts is dropped and reported, not dropped silently", () => {
    const cases: ["anthropic" | "ai-sdk", Record<string, unknown>[]][] = [
      [
        "anthropic",
        [
          { role: "user", content: "hi" },
          { role: "assistant", content: [] },
        ],
      ],
      [
        "ai-sdk",
        [
          { role: "user", content: "hi" },
          { role: "user", content: null },
          { role: "assistant", content: "ok" },
        ],
      ],
      [
        "ai-sdk",
        [
          { role: "user", content: "hi" },
          { role: "assistant", content: [] },
        ],
      ],
      [
        "ai-sdk",
        [
          { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "f", input: {} }] },
          { role: "tool", content: [] },
          {
            role: "tool",
            content: [
              { type: "tool-result", toolCallId: "c1", toolName: "f", output: { type: "text", value: "r" } },
            ],
          },
        ],
      ],
    ]
    for (const [format, msgs] of cases) {
      const mv = new MessageValidator({ format })
      expect(mv.check(msgs)).toEqual([])
      const { messages, report } = mv.repair(msgs)
      expect(messages).toEqual(msgs.filter((_, i) => i !== 1))
      expect(report.actions).toEqual([{ kind: "dropped_empty_message", messageIndex: 1 }])
    }
  })

  it("detects the format from its markers and can be told explicitly", () => {
    expect(detectFormat([{ role: "user", content: [{ type: "tool_result", tool_use_id: "x" }] }])).toBe(
      "anthropic",
    )
    expect(detectFormat([{ role: "tool", content: [{ type: "tool-result" }] }])).toBe("ai-sdk")
    expect(detectFormat([{ role: "tool", tool_call_id: "x", content: "r" }])).toBe("openai")
    expect(detectFormat([{ role: "user", content: "plain" }])).toBe("openai")
    const anthropicSystem = [{ role: "system", content: "x" }]
    expect(new MessageValidator({ format: "anthropic" }).check(anthropicSystem)[0]?.violation).toBe(
      "invalid_role",
    )
  })

  it("does not take a blank tool_call_id or tool_calls column for OpenAI's marker", () => {
    // A store with one column per field writes null (or []) where a message has no value. Taken for OpenAI, an
    // Anthropic or AI SDK call left without its result passed check(), and the provider refused the request.
    const anthropicCall = {
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "pay", input: {} }],
    }
    const aiSdkCall = {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "c1", toolName: "pay", input: {} }],
    }
    for (const [format, call] of [
      ["anthropic", anthropicCall],
      ["ai-sdk", aiSdkCall],
    ] as const) {
      for (const blank of [{ tool_call_id: null }, { tool_call_id: "" }, { tool_calls: [] }]) {
        const x = [{ role: "user", content: "pay it", ...blank }, call, { role: "user", content: "done?" }]
        expect(detectFormat(x)).toBe(format)
        expect(v.check(x).map((i) => i.violation)).toContain("missing_tool_result")
      }
    }
  })

  it("does not share nested objects between input and output", () => {
    const msgs = [{ role: "user", content: [{ type: "text", text: "hi" }] }]
    const out = v.repair(msgs).messages as typeof msgs
    out[0]!.content[0]!.text = "changed"
    expect(msgs[0]!.content[0]!.text).toBe("hi")
  })

  it("never edits a message that is not an Object.prototype object, and copies its own fields", () => {
    class UserMsg {
      role = "user"
      content = "hello"
      tool_call_id = ""
    }
    const c1 = { id: "c1", type: "function", function: { name: "f", arguments: "{}" } }
    const foreignProto = Object.create(null) // another realm's Object.prototype: no prototype either
    const foreign = Object.assign(Object.create(foreignProto), {
      role: "assistant",
      content: null,
      tool_calls: [{ ...c1, index: 3 }],
    })
    const nullProto = Object.freeze(
      Object.assign(Object.create(null), { role: "assistant", content: "hi", parsed: { x: 1 } }),
    )
    const msgs = [new UserMsg(), foreign, { role: "tool", tool_call_id: "c1", content: "r" }, nullProto]
    const before = JSON.stringify(msgs)
    const { messages } = v.repair(msgs)
    expect(JSON.stringify(msgs)).toBe(before)
    expect("tool_call_id" in msgs[0]!).toBe(true)
    expect(messages[0]).toEqual({ role: "user", content: "hello" })
    expect(messages[1]).toEqual({ role: "assistant", content: null, tool_calls: [{ ...c1, index: 0 }] })
    expect(messages[3]).toEqual({ role: "assistant", content: "hi" })
    expect(messages[1]).not.toBe(foreign)
    // A cycle through a class-instance message is refused by both, not copied forever.
    const looped = Object.assign(new UserMsg(), { content: [] as unknown[] })
    looped.content.push(looped)
    expect(v.check([looped])[0]?.violation).toBe("invalid_message")
    expect(() => v.repair([looped])).toThrow(MessageValidationError)
  })

  it("a message whose role and content are prototype getters repairs as check() reads it, and is not edited", () => {
    class Msg {
      readonly #role: string
      readonly #content: unknown
      constructor(role: string, content: unknown) {
        this.#role = role
        this.#content = content
      }
      get role() {
        return this.#role
      }
      get content() {
        return this.#content
      }
    }
    const c1 = { id: "c1", type: "function", function: { name: "f", arguments: "{}" } }
    const plain = [
      { role: "user", content: "pay" },
      { role: "assistant", content: null, tool_calls: [c1] },
      { role: "user", content: "done?" },
    ]
    // Frozen: an edit to the caller's message throws.
    const msgs = plain.map(({ role, content, ...rest }) =>
      Object.freeze(Object.assign(new Msg(role, content), rest)),
    )
    expect(v.check(msgs)).toEqual(v.check(plain))
    for (const invalidMessages of ["throw", "drop"] as const) {
      const mv = new MessageValidator({ format: "openai", invalidMessages })
      expect(mv.repair(msgs)).toEqual(mv.repair(plain))
    }
    expect(msgs.map((m) => [m.role, m.content])).toEqual(plain.map((m) => [m.role, m.content]))
  })
})
