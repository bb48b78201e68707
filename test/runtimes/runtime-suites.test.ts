// scripts/test.mjs must fail, not skip, when a runtime's glue is gone: a vitest project that ran nothing, or a
// Deno run without its vitest shim, counts as failures.
import { describe, expect, it } from "vitest"
import {
  expectedModules,
  MODULES,
  runDeno,
  VITEST_RUNTIMES,
  vitestRuntimes,
} from "../../scripts/runtime-suites.mjs"

describe("the same modules in six runtimes", () => {
  it("every runtime owes the shared modules and its own store's", () => {
    expect(MODULES.shared.length).toBeGreaterThanOrEqual(14)
    for (const rt of [...VITEST_RUNTIMES, "deno", "bun"]) {
      expect(expectedModules(rt)).toEqual(expect.arrayContaining(MODULES.shared))
      expect(expectedModules(rt).length).toBeGreaterThan(MODULES.shared.length)
    }
  })

  it("a vitest project missing from the run (its glue removed) fails with one failure per module", () => {
    const all = Object.fromEntries(
      VITEST_RUNTIMES.map((rt) => [rt, { modules: expectedModules(rt), passed: 10, failed: 0 }]),
    )
    expect(vitestRuntimes(all).map((r) => r.missing)).toEqual([0, 0, 0, 0])
    // The browser project reports under its instance's name.
    const { browser: b, ...rest } = all
    expect(vitestRuntimes({ ...rest, "browser (chromium)": b as never }).map((r) => r.missing)).toEqual([
      0, 0, 0, 0,
    ])
    const { edge: _gone, ...withoutEdge } = all
    const edge = vitestRuntimes(withoutEdge).find((r) => r.runtime === "edge")
    expect(edge).toMatchObject({ passed: 0, missing: expectedModules("edge").length })
    const partial = { ...all, browser: { modules: MODULES.shared.slice(1), passed: 10, failed: 0 } }
    // The first shared module and every module of its own store are missing.
    const browser = vitestRuntimes(partial).find((r) => r.runtime === "browser")
    expect(browser?.failed).toBe(1 + (MODULES.own.browser?.length ?? 0))
  })

  it("a runtime's isolated companion project counts with it, and a companion that did not run is missing", () => {
    const [alone = "", ...rest] = expectedModules("edge")
    const split = {
      edge: { modules: rest, passed: 10, failed: 1, skipped: 2 },
      "edge (isolated)": { modules: [alone], passed: 3, failed: 0, skipped: 0 },
    }
    const edge = vitestRuntimes(split).find((r) => r.runtime === "edge")
    expect(edge).toMatchObject({ passed: 13, failed: 1, skipped: 2, missing: 0 })
    expect(edge?.modules).toBe(expectedModules("edge").length)
    const withoutCompanion = vitestRuntimes({ edge: split.edge }).find((r) => r.runtime === "edge")
    expect(withoutCompanion).toMatchObject({ passed: 10, failed: 2, missing: 1 })
  })

  it("Deno without its vitest shim fails the run instead of passing nothing", async () => {
    const files = ["test/core/ledger/canonical.test.ts"]
    const withGlue = await runDeno({ files, echo: false })
    expect(withGlue).toMatchObject({ runtime: "deno", failed: 0, modules: 1 })
    expect(withGlue.passed).toBeGreaterThan(20)
    const noGlue = await runDeno({
      files,
      importMap: "test/runtimes/deno/no-such-import-map.json",
      echo: false,
    })
    expect(noGlue.passed).toBe(0)
    expect(noGlue.failed).toBeGreaterThanOrEqual(2) // the crash and the module that never ran
  })
})
