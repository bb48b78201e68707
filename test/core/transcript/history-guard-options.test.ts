// HistoryGuard's token limit must apply: a tokenizer that returns the tokens (tiktoken's encode()) or NaN made the
// estimate a string or NaN, which no limit exceeds, and limits changed after construction were used unchecked.
import { describe, expect, it } from "vitest"
import { InvalidOptionError } from "../../../src/core/errors.ts"
import {
  HistoryGuard,
  type HistoryGuardOptions,
  HistoryTruncatedError,
} from "../../../src/core/transcript/index.ts"

const history = Array.from({ length: 20 }, (_, i) => ({
  role: i % 2 ? "assistant" : "user",
  content: `turn ${i} ${"lorem ipsum ".repeat(100)}`,
}))

describe("HistoryGuard tokenizer and options", () => {
  for (const [label, tokenizer] of [
    ["returns the tokens (encode)", (t: string) => new Uint32Array(Math.ceil(t.length / 4))],
    ["returns NaN", () => Number.NaN],
    ["returns a negative count", () => -1],
    ["returns Infinity", () => Number.POSITIVE_INFINITY],
  ] as const) {
    it(`a tokenizer that ${label} is InvalidOptionError naming tokenizer, in validate(), estimateTokens() and trim()`, () => {
      const guard = new HistoryGuard({
        maxTokens: 1000,
        tokenizer: tokenizer as unknown as (t: string) => number,
      })
      for (const run of [
        () => guard.validate(history),
        () => guard.estimateTokens(history),
        () => guard.trim(history),
      ]) {
        expect(run).toThrow(InvalidOptionError)
        expect(run).toThrow(/tokenizer must return a count.*encode\(t\)\.length/)
      }
    })
  }

  it("a tokenizer returning a count still applies the limit", () => {
    const guard = new HistoryGuard({ maxTokens: 1000, tokenizer: (t) => Math.ceil(t.length / 4) })
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
  })

  it("limits changed after construction (to NaN) are not used", () => {
    const opts: HistoryGuardOptions = { maxTokens: 1000, maxMessages: 10 }
    const guard = new HistoryGuard(opts)
    opts.maxTokens = Number.NaN
    opts.maxMessages = Number.NaN
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
    expect(guard.trim(history).length).toBeLessThanOrEqual(10)
  })

  it("limits inherited from a defaults object apply (a spread copy dropped them)", () => {
    const guard = new HistoryGuard(Object.create({ maxMessages: 2 }) as HistoryGuardOptions)
    expect(() => guard.validate(history)).toThrow(HistoryTruncatedError)
  })

  it("a detectDuplicates typo is refused; the four values it takes are kept", () => {
    for (const bad of ["Anywhere", "all", 1, null])
      expect(
        () =>
          new HistoryGuard({ detectDuplicates: bad as unknown as HistoryGuardOptions["detectDuplicates"] }),
      ).toThrow(/detectDuplicates must be "consecutive", "anywhere" or a boolean/)
    for (const ok of ["consecutive", "anywhere", true, false, undefined] as const)
      expect(() => new HistoryGuard({ detectDuplicates: ok })).not.toThrow()
  })
})
