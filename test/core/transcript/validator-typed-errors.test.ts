import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import { MessageValidationError, MessageValidator } from "../../../src/core/transcript/index.ts"

const REPAIR_ADVICE = "Run MessageValidator.repair() to fix what can be fixed automatically."

describe("MessageValidator refuses what JavaScript callers can pass by mistake with typed errors", () => {
  it("a hole in the transcript is a message that is not an object", () => {
    // A hole, as `delete messages[1]` leaves: map() keeps it, for...of reads it as undefined.
    const messages: Record<string, unknown>[] = [{ role: "user", content: "a" }]
    messages[2] = { role: "user", content: "b" }
    expect(1 in messages).toBe(false)
    const v = new MessageValidator()
    expect(v.check(messages)).toEqual([
      expect.objectContaining({
        violation: "invalid_message",
        messageIndex: 1,
        reason: "Message 1 is not an object.",
      }),
    ])
    expect(() => v.validate(messages)).toThrow(MessageValidationError)
    expect(() => v.repair(messages)).toThrow(
      expect.objectContaining({ violation: "invalid_message", messageIndex: 1 }),
    )
    expect(new MessageValidator({ invalidMessages: "drop" }).repair(messages).messages).toEqual([
      messages[0],
      messages[2],
    ])
  })

  it("a transcript that is not an array", () => {
    const v = new MessageValidator()
    for (const messages of [null, undefined, { role: "user", content: "q" }, "hi"]) {
      for (const call of [
        () => v.check(messages as never),
        () => v.validate(messages as never),
        () => v.repair(messages as never),
        () => v.formatOf(messages as never),
      ]) {
        expect(call).toThrow(InvalidOptionError)
        expect(call).toThrow(/^MessageValidator: pass the messages as an array, got /)
      }
    }
  })

  it("an unknown format, when it is built", () => {
    for (const format of ["gemini", null, "constructor", 3]) {
      const make = () => new MessageValidator({ format } as never)
      expect(make).toThrow(InvalidOptionError)
      expect(make).toThrow(/^MessageValidator: format must be one of auto,openai,anthropic,ai-sdk, got /)
    }
    const history = [{ role: "user", content: "q" }]
    for (const format of ["auto", "openai", "anthropic", "ai-sdk", undefined] as const)
      expect(new MessageValidator({ format }).check(history)).toEqual([])
  })
})

describe("MessageValidationError says what to do next for where it came from", () => {
  const thrown = (f: () => unknown): MessageValidationError => {
    try {
      f()
    } catch (e) {
      if (e instanceof MessageValidationError) return e
      throw e
    }
    throw new Error("nothing thrown")
  }

  it("repair() refusing a message does not advise running repair()", () => {
    const e = thrown(() => new MessageValidator().repair([{ role: "bot", content: "a" }]))
    expect(e.violation).toBe("invalid_role")
    expect(e.message).not.toContain("Run MessageValidator.repair()")
    expect(e.message).toBe(e.reason)
    expect(e.message).toMatch(/invalidMessages: "drop"/)
  })

  it("validate() advises repair() where it helps, and fixing or dropping where repair() would refuse", () => {
    const v = new MessageValidator()
    const orphan = thrown(() => v.validate([{ role: "tool", tool_call_id: "x", content: "r" }]))
    expect(orphan.violation).toBe("orphaned_tool_result")
    expect(orphan.message).toBe(`${orphan.reason} ${REPAIR_ADVICE}`)
    const role = thrown(() => v.validate([{ role: "bot", content: "a" }]))
    expect(role.message).toBe(
      `${role.reason} Fix the message, or drop it with MessageValidator.repair() and { invalidMessages: "drop" }.`,
    )
  })
})
