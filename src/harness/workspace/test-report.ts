// Counts from a test run's output: vitest, node:test (spec or TAP reporter) and pytest summaries.
export interface TestCounts {
  readonly passed: number
  readonly failed: number
  readonly errors: number
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escapes start with ESC
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

/** Parses the last summary in `output`; zeros when there is none. */
export function parseTestSummary(output: string): TestCounts {
  const text = output.replace(ANSI, "")
  // node:test prints "# pass N" / "# fail N" (TAP) or "ℹ pass N" / "ℹ fail N" (spec reporter).
  const nodePass = [...text.matchAll(/^(?:#|ℹ)\s+pass\s+(\d+)\s*$/gm)].at(-1)
  const nodeFail = [...text.matchAll(/^(?:#|ℹ)\s+fail\s+(\d+)\s*$/gm)].at(-1)
  if (nodePass && nodeFail) {
    const cancelled = [...text.matchAll(/^(?:#|ℹ)\s+cancelled\s+(\d+)\s*$/gm)].at(-1)
    return { passed: Number(nodePass[1]), failed: Number(nodeFail[1]), errors: Number(cancelled?.[1] ?? 0) }
  }
  // pytest "1 failed, 2 passed, 1 error in 0.1s"; vitest "Tests  1 failed | 2 passed (3)". Scanning from the end
  // finds vitest's "Tests" line before its "Test Files" line.
  const lines = text.split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] as string
    if (/Test Files/.test(line)) continue
    // A count starts where a digit run does. Without the lookbehind each pattern was tried from every digit of a run
    // and read it to its end: quadratic, 64 KiB of digits a test printed blocked the event loop for 8 s.
    const passed = line.match(/(?<!\d)(\d+)\s+passed/)
    const failed = line.match(/(?<!\d)(\d+)\s+failed/)
    const errors = line.match(/(?<!\d)(\d+)\s+errors?\b/)
    if (passed || failed || errors)
      return {
        passed: Number(passed?.[1] ?? 0),
        failed: Number(failed?.[1] ?? 0),
        errors: Number(errors?.[1] ?? 0),
      }
  }
  return { passed: 0, failed: 0, errors: 0 }
}
