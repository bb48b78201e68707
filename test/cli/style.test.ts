// What the CLI prints comes from rows agents wrote: nothing in it may drive the operator's terminal.
import { afterEach, describe, expect, it, vi } from "vitest"
import { clean, printJson } from "../../src/cli/style.ts"

afterEach(() => {
  vi.restoreAllMocks()
})

describe("terminal-safe output", () => {
  it("--json escapes DEL and C1 controls too (JSON.stringify leaves them), and reads back as the same value", () => {
    const lines: string[] = []
    vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line))
    const value = { tool: "pay\u009b2J\u001b]0;x\u0007\u007f\u0085é", n: 12345678901234567890n }
    printJson(value)
    const [out] = lines
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/) // the newlines are its own
    expect(out).toContain("\\u009b")
    expect(JSON.parse(out as string)).toEqual({ ...value, n: "12345678901234567890" })
  })

  it("clean() shows every control character as \\xNN", () => {
    expect(clean("a\u001b[2Jb\u009bc\nd")).toBe("a\\x1b[2Jb\\x9bc\\x0ad")
  })
})
