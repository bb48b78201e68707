import { describe, expect, it } from "vitest"
import { MessageValidationError, MessageValidator } from "../../../src/core/transcript/index.ts"
import { type Builder, builders, type Msg } from "./builders.ts"

// The broken transcripts users hit in real agent frameworks (anchors §A8), rebuilt in each format.
interface Scenario {
  name: string
  build(b: Builder): Msg[]
  /** Any of these is an acceptable first diagnosis. */
  violation: string | string[]
  messageIndex?: (b: Builder) => number
  check?(repaired: Msg[], b: Builder, v: MessageValidator): void
}

const sys = (b: Builder) => b.system("You are a support agent.")

const scenarios: Scenario[] = [
  {
    // anthropics/claude-code#1237, Kilo-Org/kilocode#5163: "tool_use ids were found without tool_result blocks"
    name: "tool_use ids were found without tool_result blocks",
    build: (b) => [
      ...sys(b),
      b.user("Read package.json"),
      b.assistant("Reading it.", [{ id: "toolu_01A", name: "read_file", args: { path: "package.json" } }]),
      b.user("Why did you stop?"),
    ],
    violation: "missing_tool_result",
    messageIndex: (b) => sys(b).length + 1,
    check: (out, b, v) => {
      const text = JSON.stringify(out)
      expect(text).toContain("was interrupted before its result was recorded")
      expect(text).toContain("Why did you stop?")
      expect(v.check(out)).toEqual([])
      expect(out).toHaveLength(sys(b).length + (b.format === "anthropic" ? 3 : 4))
    },
  },
  {
    // FoundationAgents/OpenManus#744: "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
    name: "tool result with no preceding tool call (e.g. the call was trimmed away)",
    build: (b) => [
      ...sys(b),
      ...b.results([{ id: "call_gone", text: "42 rows" }]),
      b.user("Summarize the rows"),
    ],
    violation: "orphaned_tool_result",
    messageIndex: (b) => sys(b).length,
    check: (out, b) => {
      expect(JSON.stringify(out)).not.toContain("call_gone")
      expect(out).toEqual([...sys(b), b.user("Summarize the rows")])
    },
  },
  {
    // anomalyco/opencode#1211: "Tool execution aborted" and the real result both appended for one id
    name: "duplicate tool results for one call after an abort",
    build: (b) => [
      b.user("Deploy"),
      b.assistant("", [{ id: "call_7", name: "deploy" }]),
      ...b.results([{ id: "call_7", text: "Tool execution aborted", error: true }]),
      ...b.results([{ id: "call_7", text: "deployed v2" }]),
      b.user("Thanks"),
    ],
    // Anthropic also sees the second result as misplaced: only the very next message may answer a call.
    violation: ["duplicate_tool_result", "misplaced_tool_result"],
    check: (out) => {
      const text = JSON.stringify(out)
      expect(text).toContain("deployed v2")
      expect(text).not.toContain("Tool execution aborted")
    },
  },
  {
    // vercel/ai#13307: the same toolCallId re-serialized after a needsApproval step
    name: "duplicate tool_call_id after an approval step",
    build: (b) => [
      b.user("Refund order 17"),
      b.assistant("", [{ id: "call_refund", name: "refund", args: { order: 17 } }]),
      b.user("approved"),
      b.assistant("", [{ id: "call_refund", name: "refund", args: { order: 17 } }]),
      ...b.results([{ id: "call_refund", text: "refunded" }]),
    ],
    violation: "missing_tool_result",
    check: (out) => {
      const text = JSON.stringify(out)
      expect(text).toContain("call_refund_dup1")
      // the real result stays paired with the call it answered (the renamed second one)
      const idx = out.findIndex((m) => JSON.stringify(m).includes("refunded"))
      expect(JSON.stringify(out[idx])).toContain("call_refund_dup1")
    },
  },
  {
    // getnao/nao#852, CopilotKit#7277: user stops the agent mid-tool, then sends a new message
    name: "parallel calls interrupted by an abort",
    build: (b) => [
      b.user("Check both services"),
      b.assistant("", [
        { id: "call_a", name: "ping", args: { host: "a" } },
        { id: "call_b", name: "ping", args: { host: "b" } },
      ]),
      ...b.results([{ id: "call_a", text: "a is up" }]),
      b.user("never mind, check c"),
    ],
    violation: "missing_tool_result",
    check: (out) => {
      const text = JSON.stringify(out)
      expect(text).toContain("a is up")
      expect(text).toMatch(/Tool call 'ping' \(id call_b\) was interrupted/)
    },
  },
  {
    // langchain#33245 style: a result separated from its call by another turn
    name: "tool result separated from its call",
    build: (b) => [
      b.user("Weather?"),
      b.assistant("", [{ id: "call_w", name: "weather" }]),
      b.user("in Paris please"),
      ...b.results([{ id: "call_w", text: "18C" }]),
    ],
    violation: "missing_tool_result",
    check: (out, b) => {
      expect(JSON.stringify(out[2])).toContain("18C")
      expect(JSON.stringify(out)).not.toContain("interrupted")
      expect(JSON.stringify(out.at(-1))).toContain(
        b.format === "anthropic" ? "in Paris please" : "in Paris please",
      )
    },
  },
]

for (const b of builders) {
  describe(`anchor transcripts (${b.format})`, () => {
    for (const s of scenarios) {
      it(s.name, () => {
        const v = new MessageValidator()
        const broken = s.build(b)
        const before = structuredClone(broken)
        expect(v.formatOf(broken)).toBe(b.format)
        let err: unknown
        try {
          v.validate(broken)
        } catch (e) {
          err = e
        }
        expect(err).toBeInstanceOf(MessageValidationError)
        const issues = v.check(broken).map((i) => i.violation)
        const wanted = Array.isArray(s.violation) ? s.violation : [s.violation]
        expect(issues.some((i) => wanted.includes(i))).toBe(true)
        if (s.messageIndex) expect((err as MessageValidationError).messageIndex).toBe(s.messageIndex(b))
        const { messages, report } = v.repair(broken)
        expect(report.changed).toBe(true)
        expect(report.format).toBe(b.format)
        expect(() => v.validate(messages)).not.toThrow()
        expect(broken).toEqual(before)
        expect(v.repair(messages).messages).toEqual(messages)
        s.check?.(messages, b, v)
      })
    }
  })
}
