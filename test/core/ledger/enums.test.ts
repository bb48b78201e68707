// The parsers and membership checks list each enum's values literally (so the exported objects can be tree-shaken);
// these tests keep the lists equal to the objects.
import { describe, expect, it } from "vitest"
import {
  isSideEffectBoundary,
  isTerminalOutcome,
  parseRetryPermission,
  parseSideEffectBoundary,
  parseSideEffectClass,
  parseSpendability,
  parseTerminalOutcome,
  parseToolCapability,
  RetryPermission,
  SideEffectBoundary,
  SideEffectClass,
  Spendability,
  TerminalOutcome,
  ToolCapability,
} from "../../../src/core/ledger/model/enums.ts"

const cases = [
  ["side_effect_class", SideEffectClass, parseSideEffectClass],
  ["retry_permission", RetryPermission, parseRetryPermission],
  ["spendability", Spendability, parseSpendability],
  ["capability", ToolCapability, parseToolCapability],
  ["side_effect_boundary", SideEffectBoundary, parseSideEffectBoundary],
  ["outcome", TerminalOutcome, parseTerminalOutcome],
] as const

describe("enum value lists match the exported objects", () => {
  for (const [label, values, parse] of cases) {
    it(`${label}: accepts every value and names each in its error`, () => {
      for (const v of Object.values(values)) expect(parse(v)).toBe(v)
      let message = ""
      try {
        parse("nope")
      } catch (e) {
        message = (e as Error).message
      }
      expect(message).toContain(`${label} must be one of ${Object.values(values).join(", ")}, got 'nope'`)
    })
  }

  it("side_effect_class takes the original's aliases, trimmed, and nothing from Object.prototype", () => {
    expect(parseSideEffectClass(" payment ")).toBe("non_idempotent_mutate")
    expect(parseSideEffectClass("read_only")).toBe("read")
    for (const bad of ["constructor", "toString", "__proto__", 7, null]) {
      expect(() => parseSideEffectClass(bad)).toThrow(/must be one of read, idempotent_mutate/)
    }
  })

  it("isTerminalOutcome and isSideEffectBoundary hold exactly the objects' values", () => {
    for (const v of Object.values(TerminalOutcome)) expect(isTerminalOutcome(v)).toBe(true)
    for (const v of Object.values(SideEffectBoundary)) expect(isSideEffectBoundary(v)).toBe(true)
    for (const v of ["", "in_flight", "COMMITTED", "toString", "crossed "]) {
      expect(isTerminalOutcome(v)).toBe(false)
      expect(isSideEffectBoundary(v)).toBe(false)
    }
  })
})
