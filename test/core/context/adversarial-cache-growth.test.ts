// A model that cycles through entity ids must not grow a protect() cache without bound: entries past their TTL
// are reclaimed even when their key is never asked for again. Measured in a child Node with --expose-gc, the
// only way to see what the cache still holds without reaching into it.
import { spawnSync } from "node:child_process"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"

describe("ToolCache growth", () => {
  it("expired entries are released while the cache keeps being used with new keys", () => {
    const child = spawnSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", resolve("test/core/context/cache-growth-child.ts")],
      { encoding: "utf8", timeout: 60_000 },
    )
    expect(child.stderr).toBe("")
    expect(child.status).toBe(0)
    const report = JSON.parse(child.stdout) as { expired: number; alive: number; live: number }
    expect(report.live).toBe(20_000)
    expect(report.expired).toBe(20_000)
    // Before: all 20,000 expired values stayed reachable from the cache.
    expect(report.alive).toBe(0)
  })
})
