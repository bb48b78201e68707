// The harness is runtime-neutral like the rest of src/core, and it is its own entry: the core entry does not
// carry it.
import { build } from "esbuild"
import { describe, expect, it } from "vitest"
import * as core from "../../../src/core/index.ts"

describe("harness packaging", () => {
  it("src/core/harness bundles for platform neutral with no node: import and no process/Buffer", async () => {
    const out = await build({
      entryPoints: ["src/harness/index.ts"],
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      metafile: true,
      logLevel: "silent",
    })
    const inputs = Object.keys(out.metafile.inputs)
    expect(inputs.every((f) => f.startsWith("src/core/") || f === "src/harness/index.ts")).toBe(true)
    expect(inputs.some((f) => f.includes("node_modules"))).toBe(false)
    const imports = Object.values(out.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path))
    expect(imports).toEqual([])
    const code = out.outputFiles[0]?.text ?? ""
    expect(code).toContain("runPlan")
    const offenders = code
      .split("\n")
      .filter((l) => /\b(process|Buffer|require)\s*[.(]|from\s+["']node:/.test(l))
    expect(offenders).toEqual([])
  })

  it("the core entry does not export the harness", () => {
    for (const name of ["runPlan", "ScriptedModel", "RunFailed", "fromAiSdk", "createWorkspace"])
      expect(name in core, name).toBe(false)
  })
})
