// A number field's check of a model's text (`DECIMAL`) was /^[+-]?(\d+\.?\d*|\.\d+).../: \d+ and \d* split the same
// digits every way before a stray character refused the text, so 80,000 digits and an "x" took 13 s. The fixed
// pattern accepts and refuses exactly what it did.
import { describe, expect, it } from "vitest"
import { bounded, ToolBoundaryError } from "../../../src/core/tools/index.ts"

const field = (type: "number" | "integer") =>
  bounded(async (a: { amount: unknown }) => a.amount, { name: "pay", schema: { amount: { type } } })

describe("a number field reads a model's text in linear time", () => {
  it("80,000 digits followed by 'x' are refused about as fast as an integer field refuses them", async () => {
    const number = field("number")
    const integer = field("integer") // its pattern was always linear
    for (const text of [`${"1".repeat(80_000)}x`, `.${"1".repeat(80_000)}x`, `1e${"1".repeat(80_000)}x`]) {
      let t = performance.now()
      await expect(integer({ amount: text })).rejects.toBeInstanceOf(ToolBoundaryError)
      const linear = performance.now() - t
      t = performance.now()
      await expect(number({ amount: text })).rejects.toBeInstanceOf(ToolBoundaryError)
      expect(performance.now() - t).toBeLessThan(Math.max(2_000, 5 * linear))
    }
  }, 120_000)

  it("accepts and refuses what it did", async () => {
    const number = field("number")
    for (const [text, value] of [
      ["1", 1],
      ["1.", 1],
      ["1.5", 1.5],
      [".5", 0.5],
      ["1e5", 1e5],
      ["1.e5", 1e5],
      ["+.5e-3", 0.0005],
      ["-2E+2", -200],
      [" 7 ", 7], // trimmed first, as pydantic strips whitespace
    ] as const)
      expect(await number({ amount: text }), text).toBe(value)
    for (const text of [".", "0x10", "e5", "1e", "+", "1.5.", "..5", "1e5.5", "Infinity", "NaN", "1_0", ""])
      await expect(number({ amount: text }), text).rejects.toBeInstanceOf(ToolBoundaryError)
  })
})
