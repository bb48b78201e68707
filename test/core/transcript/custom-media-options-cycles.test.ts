import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import {
  HistoryDropError,
  HistoryGuard,
  HistoryTruncatedError,
  MessageValidationError,
  MessageValidator,
} from "../../../src/core/transcript/index.ts"

type Msg = Record<string, unknown>

describe("OpenAI custom tool calls ({ type: 'custom', custom: { name, input } })", () => {
  const patch = {
    id: "call_1",
    type: "custom",
    custom: { name: "apply_patch", input: "*** Begin Patch\n..." },
  }
  const history: Msg[] = [
    { role: "user", content: "apply the patch" },
    { role: "assistant", content: null, tool_calls: [patch] },
    { role: "tool", tool_call_id: "call_1", content: "patched" },
  ]

  it("are valid calls whose free-text input is not checked as JSON, answered by id", () => {
    const v = new MessageValidator()
    expect(v.check(history)).toEqual([])
    expect(v.repair(history)).toEqual({
      messages: history,
      report: { format: "openai", changed: false, actions: [] },
    })
    expect(v.check(history.slice(0, 2)).map((i) => i.violation)).toEqual(["missing_tool_result"])
  })

  it("stay pending with allowPendingToolCalls, and are not answered twice later", () => {
    const v = new MessageValidator({ allowPendingToolCalls: true })
    const { messages, report } = v.repair(history.slice(0, 2))
    expect(report.actions).toEqual([])
    expect(messages).toEqual(history.slice(0, 2))
    expect(v.check([...messages, history[2] as Msg])).toEqual([])
  })

  it("count their input towards the token estimate", () => {
    const long = { ...patch, custom: { name: "apply_patch", input: "x".repeat(4000) } }
    const g = new HistoryGuard()
    const withCall = [{ role: "assistant", content: null, tool_calls: [long] }]
    expect(g.estimateTokens(withCall)).toBeGreaterThan(1000)
  })
})

describe("HistoryGuard fingerprints parts without text by what identifies them", () => {
  const user = (part: Msg): Msg => ({ role: "user", content: [part] })
  const pool = new Uint8Array(8000).map((_, i) => (i < 4000 ? 7 : i))
  const pairs: [string, Msg, Msg][] = [
    [
      "openai image_url",
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      { type: "image_url", image_url: { url: "data:image/png;base64,BBBBBBBBBBBB" } },
    ],
    [
      "anthropic image and document",
      { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" } },
    ],
    [
      "ai-sdk image and file",
      { type: "image", image: "https://example.com/front.png" },
      { type: "file", data: "https://example.com/invoice.pdf", mediaType: "application/pdf" },
    ],
    [
      "ai-sdk binary images",
      { type: "image", image: new Uint8Array(5000).fill(1), mediaType: "image/png" },
      { type: "image", image: new Uint8Array(5000).fill(2), mediaType: "image/png" },
    ],
    [
      "ai-sdk ArrayBuffer images",
      { type: "image", image: new Uint8Array(3000).fill(1).buffer, mediaType: "image/png" },
      { type: "image", image: new Uint8Array(3000).fill(2).buffer, mediaType: "image/png" },
    ],
    [
      // Node Buffers are views into a shared pool: only the view's own bytes count.
      "views into one buffer",
      { type: "file", data: pool.subarray(0, 4000), mediaType: "application/pdf" },
      { type: "file", data: pool.subarray(4000), mediaType: "application/pdf" },
    ],
    [
      "long base64 data that differs past its prefix",
      {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: `iVBOR${"A".repeat(200_000)}` },
      },
      {
        type: "image",
        source: {
          type: "base64",
          media_type: "image/png",
          data: `iVBOR${"A".repeat(199_990)}B${"A".repeat(9)}`,
        },
      },
    ],
  ]

  for (const [name, a, b] of pairs) {
    it(`${name}: two different parts back to back are no duplicate, the same one twice is`, () => {
      expect(() => new HistoryGuard().validate([user(a), user(b)])).not.toThrow()
      expect(() => new HistoryGuard().validate([user(a), user(structuredClone(a))])).toThrow(
        expect.objectContaining({ code: "history_duplicate_turns" }),
      )
    })
  }

  it("a view counts by its own bytes, wherever they sit", () => {
    const part = (data: Uint8Array): Msg => user({ type: "file", data, mediaType: "application/pdf" })
    const tail = pool.slice(4000) // the same bytes as pool.subarray(4000), in a buffer of their own
    expect(() => new HistoryGuard().validate([part(pool.subarray(4000)), part(tail)])).toThrow(
      expect.objectContaining({ code: "history_duplicate_turns" }),
    )
  })

  it("swapping an image for another one is a drop, and the token estimate ignores the data", () => {
    const [, a, b] = pairs[0] as [string, Msg, Msg]
    const g = new HistoryGuard({ detectDuplicates: false })
    g.validate([user(a)])
    expect(() => g.validate([user(b)])).toThrow(HistoryDropError)
    const big = user({
      type: "image_url",
      image_url: { url: `data:image/png;base64,${"A".repeat(100_000)}` },
    })
    expect(g.estimateTokens([big])).toBe(g.estimateTokens([user(a)]))
  })
})

describe("HistoryGuard numeric options", () => {
  const bad: unknown[] = [Number.NaN, -1, Number.POSITIVE_INFINITY, null, "100"]
  for (const key of ["maxTokens", "maxMessages", "warnAt"] as const) {
    it(`refuses ${key} that is not a finite number >= 0 (an unset env variable read as NaN)`, () => {
      for (const value of bad) {
        const make = () => new HistoryGuard({ [key]: value } as Record<string, number>)
        expect(make).toThrow(InvalidOptionError)
        expect(make).toThrow(expect.objectContaining({ code: "invalid_option" }))
        expect(make).toThrow(new RegExp(`^HistoryGuard ${key} must be a finite number >= 0`))
      }
    })
  }

  it("keeps 0 as it was: the tightest limit, not 'no limit'", () => {
    const one = [{ role: "user", content: "hi" }]
    expect(() => new HistoryGuard({ maxMessages: 0 }).validate(one)).toThrow(
      expect.objectContaining({ reason: "message_count" }),
    )
    expect(() => new HistoryGuard({ maxTokens: 0 }).validate(one)).toThrow(
      expect.objectContaining({ reason: "token_limit" }),
    )
    expect(new HistoryGuard({ maxMessages: 0 }).validate([])).toEqual([])
    expect(() => new HistoryGuard({ maxTokens: 0 }).trim(one)).toThrow(HistoryTruncatedError)
  })
})

describe("messages holding a cycle", () => {
  const cyclic = (): Msg[] => {
    const meta: Msg = { note: "x" }
    meta.self = meta
    return [
      { role: "user", content: [{ type: "text", text: "hi", providerOptions: meta }] },
      { role: "assistant", content: [{ type: "text", text: "hello" }] },
    ]
  }

  it("are invalid_message in check(), and repair() refuses or drops them instead of copying forever", () => {
    const v = new MessageValidator({ format: "ai-sdk" })
    const messages = cyclic()
    expect(v.check(messages)).toEqual([
      expect.objectContaining({
        violation: "invalid_message",
        messageIndex: 0,
        reason: expect.stringMatching(/cycle/),
      }),
    ])
    expect(() => v.repair(messages)).toThrow(MessageValidationError)
    expect(() => v.repair(messages)).toThrow(
      expect.objectContaining({ violation: "invalid_message", messageIndex: 0 }),
    )
    const dropped = new MessageValidator({ format: "ai-sdk", invalidMessages: "drop" }).repair(messages)
    expect(dropped.messages).toEqual([messages[1]])
    expect(dropped.report.actions).toEqual([
      expect.objectContaining({ kind: "dropped_invalid_message", messageIndex: 0 }),
    ])
  })

  it("an object shared by two branches is no cycle", () => {
    const shared = { cache: true }
    const messages = [
      { role: "user", content: [{ type: "text", text: "hi", providerOptions: { a: shared, b: shared } }] },
    ]
    const v = new MessageValidator({ format: "ai-sdk" })
    expect(v.check(messages)).toEqual([])
    expect(v.repair(messages).report.changed).toBe(false)
  })
})
