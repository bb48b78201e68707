// The test frameworks test_run knows, apart from the events that name them so the parser can check one without
// an import circle.

export type TestFramework = "pytest" | "vitest" | "node" | "custom"

export const TEST_FRAMEWORKS: readonly TestFramework[] = ["pytest", "vitest", "node", "custom"]

/** One of the four; anything else (a model's "Pytest") must not fall through to `custom`, a raw shell command. */
export const isTestFramework = (f: unknown): f is TestFramework =>
  TEST_FRAMEWORKS.includes(f as TestFramework)
