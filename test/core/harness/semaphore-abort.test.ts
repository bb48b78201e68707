// What an aborted waiter leaves behind in a long-lived semaphore (the exported class, a run's request cap behind a
// hung request): nothing. Measured in a child Node with --expose-gc, the only way to see what the queue still holds
// without reaching into it.
import { spawnSync } from "node:child_process"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"

describe("Semaphore aborts without releases", () => {
  it("releases every aborted waiter while the permit stays held", () => {
    const child = spawnSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", resolve("test/core/harness/semaphore-abort-child.ts")],
      { encoding: "utf8", timeout: 60_000 },
    )
    expect(child.stderr).toBe("")
    expect(child.status).toBe(0)
    const report = JSON.parse(child.stdout) as { aborted: number; alive: number; inUse: number }
    expect(report.aborted).toBe(20_000)
    // Before: every aborted waiter stayed linked in the queue, and its signal and reason with it, until a release
    // walked past it: all 20,000.
    expect(report.alive).toBe(0)
    expect(report.inUse).toBe(0)
  })
})
