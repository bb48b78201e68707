// parsePythonJson sends a line to the exact reader only when JSON.parse could read it otherwise than json.loads: a
// run of 16 digits (a time.time() timestamp with 7 decimals) sent every receipt line there, and a verify over a
// file of 20,000 receipts took 4 GB. adversarial-python.test.ts checks the readings against python3.
import { describe, expect, it, vi } from "vitest"
import * as exact from "../../../src/core/exact-json.ts"
import { parsePythonJson } from "../../../src/core/python-json.ts"

vi.mock("../../../src/core/exact-json.ts", async (original) => {
  const m = await original<typeof exact>()
  return { ...m, parseExactJson: vi.fn(m.parseExactJson) }
})

const line = (n: string) => `{"timestamp": ${n}, "outputs": "y", "n": [${n}]}`

describe("parsePythonJson's fast path", () => {
  it("a long number that is the same double in both (a 17-digit timestamp) costs one JSON.parse", () => {
    for (const n of [
      "1764957600.1234567",
      "0.30000000000000004",
      "9007199254740991",
      "-1234567.890123456789",
    ]) {
      vi.mocked(exact.parseExactJson).mockClear()
      expect(parsePythonJson(line(n)), n).toEqual(JSON.parse(line(n)))
      expect(exact.parseExactJson, n).not.toHaveBeenCalled()
    }
  })

  it("one JSON.parse reads otherwise (beyond 2^53, a fraction rounded to whole) goes to the exact reader", () => {
    for (const n of ["9007199254740993", "100000.000000000001", "0.99999999999999999", "1.5e16"]) {
      vi.mocked(exact.parseExactJson).mockClear()
      parsePythonJson(line(n))
      expect(exact.parseExactJson, n).toHaveBeenCalled()
    }
  })
})
