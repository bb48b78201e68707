// A model may send one id for every tool call. repair() matched each result by filtering every call sharing its id
// (and its block's own call by scanning that message's calls), and check() found where a missing result sits by
// scanning every result with that id from the first: both quadratic (32,000 calls named call_0 with their results
// moved took 24 s to repair). The work happens on the matcher's own records, where no getter can count it, so
// these compare times, with a wide margin: each shape must stay within max(2 s, 5x) of a shape of the same size that
// no version of the matcher found hard (the quadratic ones took 4-6 s here on a machine where that one took 0.5 s).
import { describe, expect, it } from "vitest"
import { MessageValidator } from "../../../src/core/transcript/index.ts"
import type { Msg } from "./builders.ts"

const timed = <T>(run: () => T): [T, number] => {
  const t = performance.now()
  const value = run()
  return [value, performance.now() - t]
}
const use = (id: string) => ({ type: "tool_use", id, name: "lookup", input: {} })
const result = (id: string, i: number) => ({ type: "tool_result", tool_use_id: id, content: `r${i}` })
const ids = (n: number, id?: string) => Array.from({ length: n }, (_, i) => id ?? `c${i}`)

describe("MessageValidator.repair() with a reused call id", () => {
  const v = new MessageValidator({ format: "anthropic" })
  // Every result after a later turn, so each one is moved to its call.
  const moved = (calls: string[]): Msg[] => [
    { role: "user", content: "go" },
    { role: "assistant", content: calls.map(use) },
    { role: "user", content: "next" },
    { role: "assistant", content: "ok" },
    { role: "user", content: calls.map(result) },
  ]
  // Every result in the block of the message that made the calls.
  const inBlock = (calls: string[]): Msg[] => [
    { role: "user", content: "go" },
    { role: "assistant", content: calls.map(use) },
    { role: "user", content: calls.map(result) },
  ]

  it.each([
    [
      "20,000 calls named call_0 whose results come a turn late",
      20_000,
      (n: number) => moved(ids(n, "call_0")),
    ],
    ["40,000 calls named call_0 answered in their block", 40_000, (n: number) => inBlock(ids(n, "call_0"))],
    ["40,000 calls with their own ids answered in their block", 40_000, (n: number) => inBlock(ids(n))],
  ])(
    "%s repair in about linear time",
    (_, n, shape) => {
      const [, linear] = timed(() => v.repair(moved(ids(n))))
      const input = shape(n)
      const [out, took] = timed(() => v.repair(input))
      expect(took).toBeLessThan(Math.max(2_000, 5 * linear))
      // Every call kept and answered once, by its own result: none synthetic, none dropped.
      expect(v.check(out.messages)).toEqual([])
      const json = JSON.stringify(out.messages)
      expect(json).not.toContain("interrupted")
      expect(out.report.actions.filter((a) => a.kind.startsWith("dropped"))).toEqual([])
      const blocks = out.messages.flatMap((m) => (Array.isArray(m.content) ? (m.content as Msg[]) : []))
      expect(blocks.filter((b) => b.type === "tool_use")).toHaveLength(n)
      expect(blocks.filter((b) => b.type === "tool_result")).toHaveLength(n)
    },
    120_000,
  )
})

describe("MessageValidator.check() with a reused call id", () => {
  it("40,000 calls named call_0 after 40,000 stray results for it are checked in about linear time", () => {
    const v = new MessageValidator({ format: "anthropic" })
    const n = 40_000
    const shape = (resultId: string): Msg[] => [
      { role: "user", content: ids(n, resultId).map(result) },
      { role: "assistant", content: ids(n, "call_0").map(use) },
      { role: "user", content: "u" },
    ]
    const [control, linear] = timed(() => v.check(shape("other")))
    const [issues, took] = timed(() => v.check(shape("call_0")))
    expect(took).toBeLessThan(Math.max(2_000, 5 * linear))
    expect(issues).toHaveLength(control.length)
    // None of the results sits at or after the calls: each missing result is reported as missing, not elsewhere.
    const missing = issues.filter((i) => i.violation === "missing_tool_result")
    expect(missing).toHaveLength(n)
    expect(missing.every((i) => i.reason.includes("no result right after it"))).toBe(true)
  }, 120_000)

  it("a result after the call is still found: the nearest one at or after the call's message", () => {
    const v = new MessageValidator({ format: "openai" })
    const call = (id: string) => ({ id, type: "function", function: { name: "f", arguments: "{}" } })
    const messages: Msg[] = [
      { role: "user", content: "go" },
      { role: "tool", tool_call_id: "call_0", content: "0" },
    ]
    for (let i = 0; i < 3; i++)
      messages.push(
        { role: "assistant", content: null, tool_calls: [call("call_0")] },
        { role: "user", content: "u" },
        { role: "tool", tool_call_id: "call_0", content: `${i}` },
      )
    const elsewhere = v
      .check(messages)
      .filter((i) => i.violation === "missing_tool_result")
      .map((i) => [i.messageIndex, /in message (\d+)/.exec(i.reason)?.[1]])
    expect(elsewhere).toEqual([
      [2, "4"],
      [5, "7"],
      [8, "10"],
    ])
  })
})
