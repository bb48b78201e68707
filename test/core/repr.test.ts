// The one pyRepr: strings exactly as Python's repr() writes them, checked against python3 itself.
import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { pyRepr, pyStrRepr } from "../../src/core/repr.ts"

const SAMPLES = [
  "plain",
  "it's",
  'say "hi"',
  `both ' and "`,
  "back\\slash",
  "line\nbreak\ttab\rcr",
  "nul\u0000bell\u0007del\u007f",
  "c1\u0085\u009f",
  "nbsp\u00a0thin\u2009",
  "sep\u2028\u2029",
  "zero-width\u200b",
  "accents éü and emoji 🎉",
  "private\ue000",
  "lone\ud800surrogate",
  "",
]

describe("pyRepr", () => {
  it("quotes and escapes strings byte for byte as python3's repr()", () => {
    const script = "import json,sys\nprint(json.dumps([repr(s) for s in json.load(sys.stdin)]))"
    const input = JSON.stringify(SAMPLES)
    const expected = JSON.parse(execFileSync("python3", ["-c", script], { input }).toString()) as string[]
    expect(SAMPLES.map(pyStrRepr)).toEqual(expected)
  })

  it("renders values as the original's LLM-facing messages do", () => {
    expect(pyRepr({ a: [1, true, null], "b'": "x" })).toBe(`{'a': [1, True, null], "b'": 'x'}`)
  })
})
