import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MessageValidator } from "../../../src/core/transcript/index.ts"
import { type Builder, builders, type Call, type Msg } from "./builders.ts"
import { providerViolations } from "./provider-rules.ts"

// Random transcripts drawn from a small id pool so reused ids, orphans, duplicates, misplaced and missing
// results, results in the wrong role and malformed arguments all show up often.
type Op =
  | { kind: "user"; text: string }
  | {
      kind: "assistant"
      text: string
      calls: { id: string; bad: Malformed | undefined }[]
      /** Results carried inside this assistant message (a wrong-role shape in every format). */
      inline: { id: string; error: boolean }[]
    }
  | {
      kind: "results"
      ids: { id: string; error: boolean }[]
      trailing: string | undefined
      wrongRole: boolean
    }
type Turn = { kind: "user"; text: string } | { kind: "turn"; text: string; n: number }

// Arguments each format refuses: unparsable or non-object JSON text, strings, arrays, numbers, null.
type Malformed = { raw: unknown }
const malformed: fc.Arbitrary<Malformed> = fc
  .constantFrom<unknown>('{"city": "Par', "[1,2]", "plain text", "", '"quoted"', "null", 42, null, [1, 2])
  .map((raw) => ({ raw }))
const ids = fc.constantFrom("call_a", "call_b", "call_c", "call_d")
const text = fc.constantFrom("hi", "ok", "done", "again")
// Random ops may also leave a turn empty (an assistant with no text and no calls, an empty user message).
const anyText = fc.constantFrom("hi", "ok", "done", "again", "")
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("user" as const), text: anyText }),
  fc.record({
    kind: fc.constant("assistant" as const),
    text: anyText,
    calls: fc.array(fc.record({ id: ids, bad: fc.option(malformed, { nil: undefined, freq: 4 }) }), {
      maxLength: 3,
    }),
    inline: fc.oneof(
      { weight: 4, arbitrary: fc.constant([] as { id: string; error: boolean }[]) },
      {
        weight: 1,
        arbitrary: fc.array(fc.record({ id: ids, error: fc.boolean() }), { minLength: 1, maxLength: 2 }),
      },
    ),
  }),
  fc.record({
    kind: fc.constant("results" as const),
    ids: fc.array(fc.record({ id: ids, error: fc.boolean() }), { minLength: 1, maxLength: 3 }),
    trailing: fc.option(text, { nil: undefined }),
    wrongRole: fc.boolean(),
  }),
)

const toCall = (id: string, bad: Malformed | undefined): Call =>
  bad ? { id, name: "lookup", rawArgs: bad.raw } : { id, name: "lookup" }
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
      if (o.kind === "assistant") {
        const calls = o.calls.map((c) => toCall(c.id, c.bad))
        if (o.inline.length === 0) return [b.assistant(o.text, calls)]
        const rs = o.inline.map((r) => ({ id: r.id, text: `result of ${r.id}`, error: r.error }))
        return b.assistantAnswering(o.text, calls, rs)
      }
      const rs = o.ids.map((r) => ({ id: r.id, text: `result of ${r.id}`, error: r.error }))
      return o.wrongRole ? b.misplaced(rs, o.trailing) : b.results(rs, o.trailing)
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

    it("repair() output validates, the provider's own rules accept it, repair() is idempotent and never mutates its input", () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
          const input = render(b, ops)
          const snapshot = structuredClone(input)
          const once = v.repair(input)
          expect(v.check(once.messages)).toEqual([])
          expect(providerViolations(b.format, once.messages)).toEqual([])
          const twice = v.repair(once.messages)
          expect(twice.messages).toEqual(once.messages)
          expect(twice.report.changed).toBe(false)
          expect(input).toEqual(snapshot)
        }),
        { numRuns: 1000 },
      )
    })

    it("every call in repaired output is answered exactly once, and no result is invented for real ones", () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
          const input = render(b, ops)
          const out = v.repair(input).messages
          expect(providerViolations(b.format, out)).toEqual([])
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
          expect(providerViolations(b.format, input)).toEqual([])
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

// Unique call ids, each call's result placed one way: in the block right after it, in the wrong role,
// both (the same result twice), or nowhere. Whatever the placement, a real result is kept exactly once
// and only a call with no result at all gets a synthetic one.
type Placement = "block" | "wrong-role" | "inline" | "both" | "none"
const spec = fc.record({
  placement: fc.constantFrom<Placement>("block", "wrong-role", "inline", "both", "none"),
  error: fc.boolean(),
  bad: fc.option(malformed, { nil: undefined, freq: 3 }),
})

for (const b of builders) {
  describe(`MessageValidator keeps real results (${b.format})`, () => {
    const v = new MessageValidator({ format: b.format })

    it("a real result in any placement is kept once and never replaced by a placeholder", () => {
      fc.assert(
        fc.property(fc.array(fc.array(spec, { minLength: 1, maxLength: 3 }), { maxLength: 5 }), (turns) => {
          let n = 0
          const calls: { id: string; s: (typeof turns)[number][number] }[] = []
          const input: Msg[] = [...b.system("sys")]
          for (const turn of turns) {
            const mine = turn.map((s) => ({ id: `c${n++}`, s }))
            calls.push(...mine)
            const inline = mine.filter((c) => c.s.placement === "inline")
            input.push(
              b.user("go"),
              ...b.assistantAnswering(
                "step",
                mine.map((c) => toCall(c.id, c.s.bad)),
                inline.map((c) => ({ id: c.id, text: `real result of ${c.id}.`, error: c.s.error })),
              ),
            )
            const result = (c: (typeof mine)[0]) => ({
              id: c.id,
              text: `real result of ${c.id}.`,
              error: c.s.error,
            })
            const inBlock = mine.filter((c) => c.s.placement === "block" || c.s.placement === "both")
            const wrong = mine.filter((c) => c.s.placement === "wrong-role" || c.s.placement === "both")
            if (inBlock.length > 0) input.push(...b.results(inBlock.map(result)))
            if (wrong.length > 0) input.push(...b.misplaced(wrong.map(result)))
          }
          const out = v.repair(input).messages
          expect(v.check(out)).toEqual([])
          expect(providerViolations(b.format, out)).toEqual([])
          const json = JSON.stringify(out)
          for (const { id, s } of calls) {
            const kept = json.split(`real result of ${id}.`).length - 1
            const interrupted = json.includes(`(id ${id}) was interrupted`)
            const closed = json.includes(`(id ${id}) had arguments that were not a JSON object`)
            if (s.placement === "none") {
              expect(kept).toBe(0)
              expect(s.bad ? closed : interrupted).toBe(true)
            } else {
              expect(kept).toBe(1)
              expect(interrupted || closed).toBe(false)
            }
          }
        }),
        { numRuns: 500 },
      )
    })
  })
}
