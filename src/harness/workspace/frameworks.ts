// The test frameworks test_run knows, apart from the events that name them so the parser can check one without
// an import circle.

export const TEST_FRAMEWORKS = ["pytest", "vitest", "node", "custom"] as const

export type TestFramework = (typeof TEST_FRAMEWORKS)[number]

/** One of the four; anything else (a model's "Pytest") must not fall through to `custom`, a raw shell command. */
export const isTestFramework = (f: unknown): f is TestFramework =>
  (TEST_FRAMEWORKS as readonly unknown[]).includes(f)
