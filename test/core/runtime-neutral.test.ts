// src/core must run unchanged in Workers, browsers, Deno and Bun: no Node built-ins, no Node globals. The core
// entry and the guard families that have entries of their own (src/tools.ts, …) are bundled together.
import { build } from "esbuild"
import { describe, expect, it } from "vitest"

describe("src/core is runtime-neutral", () => {
  it("bundles for platform neutral with no node: import and no process/Buffer reference", async () => {
    const out = await build({
      entryPoints: ["index", "tools", "transcript", "receipts", "tasks", "state"].map((f) =>
        f === "index" ? "src/core/index.ts" : `src/core/${f}/index.ts`,
      ),
      outdir: "out",
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      target: "es2022",
      metafile: true,
      logLevel: "silent",
    })
    const inputs = Object.keys(out.metafile.inputs)
    expect(inputs.every((f) => f.startsWith("src/core/"))).toBe(true)
    const imports = Object.values(out.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path))
    expect(imports.filter((p) => p.startsWith("node:") || !p.startsWith("."))).toEqual([])
    expect(out.outputFiles).toHaveLength(6)
    const code = out.outputFiles.map((o) => o.text).join("\n")
    expect(code.length).toBeGreaterThan(10_000)
    const offenders = code
      .split("\n")
      .filter((line) => /\b(process|Buffer|require)\s*[.(]|from\s+["']node:|import\(["']node:/.test(line))
    expect(offenders).toEqual([])
  })

  it("the check itself catches a Node API", async () => {
    const out = await build({
      stdin: {
        contents:
          "import { readFileSync } from 'node:fs'; export const x = process.env.X ?? Buffer.from('a'); export { readFileSync }",
        loader: "ts",
      },
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      external: ["node:*"],
      logLevel: "silent",
      metafile: true,
    })
    const imports = Object.values(out.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path))
    expect(imports).toContain("node:fs")
    expect(/\bprocess\s*\./.test(out.outputFiles[0]?.text ?? "")).toBe(true)
  })
})
