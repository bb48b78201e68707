// The published .d.ts files: nothing marked @internal, no engine members on the public classes, the main entry
// exports no adapter-author helpers (those are in `mycelium-runtime/adapter-kit`), and the types every entry
// publishes have no `any` and name only types a consumer can import (type-surface.ts walks them).
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { entryFiles, type Surface, typeSurface } from "./type-surface.ts"

const out = mkdtempSync(join(tmpdir(), "mycelium-dts-"))
const dts = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n)
    return statSync(p).isDirectory() ? dts(p) : n.endsWith(".d.ts") ? [p] : []
  })

// Members the public classes used to expose to their own engine (issue #9).
const ENGINE_MEMBERS = [
  "casFrom",
  "runClaim",
  "claimContext",
  "freshEntry",
  "completeHeld",
  "failHeld",
  "markUnknownHeld",
  "attachRefHeld",
  "renewHeld",
  "advanceBoundaryHeld",
  "warnOnce",
  "store",
  "startAutoRenew",
  "recordFailure",
]
const ADAPTER_HELPERS = [
  "decideClaim",
  "stampClaim",
  "matchesExpectation",
  "repairFields",
  "sha256HexJs",
  "toHex",
  "pythonFloatRepr",
  "SafeStorage",
  "newEntry",
  "entryFromRow",
]

// The guard families that are entries of their own (`mycelium-runtime/tools`, …), beside the core entry.
const FAMILIES = ["tools.ts", "transcript.ts", "receipts.ts", "tasks.ts", "state.ts"]

describe("published declarations", () => {
  beforeAll(() => {
    execFileSync("npx", ["tsc", "-p", "tsconfig.build.json", "--outDir", out], { stdio: "pipe" })
  }, 180_000)
  afterAll(() => rmSync(out, { recursive: true, force: true }))

  it("contain nothing marked @internal", () => {
    const files = dts(out)
    expect(files.length).toBeGreaterThan(30)
    expect(files.filter((f) => readFileSync(f, "utf8").includes("@internal"))).toEqual([])
  })

  it("ActionLedger and the tool wrapper show no engine members", () => {
    const facade = readFileSync(join(out, "core/ledger/action-ledger.d.ts"), "utf8")
    const tool = readFileSync(join(out, "core/ledger/engine/tool.d.ts"), "utf8")
    const cls = facade.slice(facade.indexOf("export declare class ActionLedger"))
    for (const m of ENGINE_MEMBERS) expect(cls, m).not.toMatch(new RegExp(`\\b${m}\\b`))
    const ctx = tool.slice(tool.indexOf("export interface TransitionContext"))
    for (const m of ["startAutoRenew", "recordFailure", "stop", "complete"])
      expect(ctx.slice(0, ctx.indexOf("}\n")), m).not.toMatch(new RegExp(`\\b${m}\\(`))
  })

  it("the main entry exports no adapter-author helpers; the adapter kit does", async () => {
    const main = (await import("../../src/index.ts")) as Record<string, unknown>
    const kit = (await import("../../src/adapter-kit.ts")) as Record<string, unknown>
    for (const h of ADAPTER_HELPERS) {
      expect(main[h], h).toBeUndefined()
      expect(kit[h], h).toBeDefined()
    }
    // The hand-written lists: src/index.ts is only the alias of src/core/index.ts.
    for (const f of [
      "core/index.ts",
      "core/ledger/index.ts",
      "core/tools/index.ts",
      "adapter-kit.ts",
      ...FAMILIES,
    ])
      expect(readFileSync(`src/${f}`, "utf8"), f).not.toMatch(/export \*/)
    expect(readFileSync("src/index.ts", "utf8").trim()).toBe('export * from "./core/index.ts"')
  })

  it("the core entry and each guard family's entry share no name: every public name has one entry", () => {
    // From the source lists, not the loaded modules: type names vanish at run time.
    const listed = (f: string) =>
      [...readFileSync(`src/${f}`, "utf8").matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
        (m[1] as string)
          .split(",")
          .map((n) => n.replace(/^\s*type\s+/, "").trim())
          .filter(Boolean),
      )
    const owner = new Map<string, string>()
    for (const f of ["core/index.ts", ...FAMILIES]) {
      const names = listed(f)
      expect(names.length, f).toBeGreaterThan(10)
      for (const n of names) {
        expect(owner.get(n), `${n} in ${f}`).toBeUndefined()
        owner.set(n, f)
      }
    }
    expect(owner.get("ActionLedger")).toBe("core/index.ts")
    expect(owner.get("bounded")).toBe("tools.ts")
  })

  // One program over every entry's declarations, shared by the two checks below.
  let surface: Surface | undefined
  const walked = (): Surface => {
    if (!surface) {
      const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
        exports: Record<string, string | { types: string }>
      }
      const entries = entryFiles(pkg.exports, out)
      expect(entries.length).toBeGreaterThan(30)
      surface = typeSurface(entries, out)
      console.log(
        `type surface: ${entries.length} entries, ${surface.symbols} declarations walked, ${surface.parameters} parameters checked`,
      )
    }
    return surface
  }

  it("no public signature of any entry, nor a package type it reaches, has an explicit `any`", () => {
    const { symbols, anys } = walked()
    expect(symbols).toBeGreaterThan(500)
    expect(anys).toEqual([])
  }, 60_000)

  it("every package type an option, parameter, property or return names can be imported under its name", () => {
    const { parameters, unnamed } = walked()
    expect(parameters).toBeGreaterThan(700)
    expect(unnamed).toEqual([])
  }, 60_000)
})
