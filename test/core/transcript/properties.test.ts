import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MessageValidator } from "../../../src/core/transcript/index.ts"
import { type Builder, builders, type Msg } from "./builders.ts"

// Random transcripts drawn from a small id pool so reused ids, orphans, duplicates, misplaced and missing
// results all show up often.
type Op =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text: string; calls: string[] }
  | { kind: "results"; ids: { id: string; error: boolean }[]; trailing: string | undefined }
type Turn = { kind: "user"; text: string } | { kind: "turn"; text: string; n: number }

const ids = fc.constantFrom("call_a", "call_b", "call_c", "call_d")
const text = fc.constantFrom("hi", "ok", "done", "again")
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("user" as const), text }),
  fc.record({ kind: fc.constant("assistant" as const), text, calls: fc.array(ids, { maxLength: 3 }) }),
  fc.record({
    kind: fc.constant("results" as const),
    ids: fc.array(fc.record({ id: ids, error: fc.boolean() }), { minLength: 1, maxLength: 3 }),
    trailing: fc.option(text, { nil: undefined }),
  }),
)
// Well-formed turns: every call answered right away (used to check repair() leaves valid input alone).
const validTurn: fc.Arbitrary<Turn> = fc.oneof(
  fc.record({ kind: fc.constant("user" as const), text }),
  fc.record({ kind: fc.constant("turn" as const), text, n: fc.integer({ min: 0, max: 3 }) }),
)

export function render(b: Builder, ops: Op[]): Msg[] {
  return [
    ...b.system("sys"),
    ...ops.flatMap((o): Msg[] => {
      if (o.kind === "user") return [b.user(o.text)]
      if (o.kind === "assistant")
        return [
          b.assistant(
            o.text,
            o.calls.map((id) => ({ id, name: "lookup" })),
          ),
        ]
      return b.results(
        o.ids.map((r) => ({ id: r.id, text: `result of ${r.id}`, error: r.error })),
        o.trailing,
      )
    }),
  ]
}

function renderValid(b: Builder, turns: Turn[]): Msg[] {
  let next = 0
  return [
    ...b.system("sys"),
    ...turns.flatMap((t): Msg[] => {
      if (t.kind === "user") return [b.user(t.text)]
      const calls = Array.from({ length: t.n }, () => ({ id: `call_${next++}`, name: "lookup" }))
      if (calls.length === 0) return [b.assistant(t.text)]
      return [b.assistant(t.text, calls), ...b.results(calls.map((c) => ({ id: c.id, text: "r" })))]
    }),
  ]
}

for (const b of builders) {
  describe(`MessageValidator properties (${b.format})`, () => {
    const v = new MessageValidator({ format: b.format })

    it("repair() output always validates, and repair() is idempotent, and never mutates its input", () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
          const input = render(b, ops)
          const snapshot = structuredClone(input)
          const once = v.repair(input)
          expect(v.check(once.messages)).toEqual([])
          const twice = v.repair(once.messages)
          expect(twice.messages).toEqual(once.messages)
          expect(twice.report.changed).toBe(false)
          expect(input).toEqual(snapshot)
        }),
        { numRuns: 400 },
      )
    })

    it("every call in repaired output is answered exactly once, and no result is invented for real ones", () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
          const input = render(b, ops)
          const out = v.repair(input).messages
          const json = JSON.stringify(out)
          const resultsIn = (JSON.stringify(input).match(/result of call_\w/g) ?? []).length
          const resultsOut = (json.match(/result of call_\w/g) ?? []).length
          expect(resultsOut).toBeLessThanOrEqual(resultsIn)
        }),
        { numRuns: 200 },
      )
    })

    it("valid transcripts pass validate() and repair() returns them unchanged", () => {
      fc.assert(
        fc.property(fc.array(validTurn, { maxLength: 10 }), (turns) => {
          const input = render(b, []).concat(renderValid(b, turns).slice(b.system("sys").length))
          expect(v.check(input)).toEqual([])
          const { messages, report } = v.repair(input)
          expect(messages).toEqual(input)
          expect(report.changed).toBe(false)
          expect(report.actions).toEqual([])
        }),
        { numRuns: 200 },
      )
    })
  })
}
