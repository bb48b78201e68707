// `mycelium-runtime/client` runs in browser tabs and workers: fetch only, no hono, no zod, no Node built-ins.
import { build } from "esbuild"
import { describe, expect, it } from "vitest"

describe("the client entry", () => {
  it("bundles without hono, zod or node: imports", async () => {
    const out = await build({
      entryPoints: ["src/edge/client.ts"],
      bundle: true,
      format: "esm",
      platform: "neutral",
      minify: true,
      write: false,
      metafile: true,
      logLevel: "silent",
    })
    const inputs = Object.keys(out.metafile.inputs)
    expect(inputs.filter((i) => /node_modules\/(hono|zod|jose)\//.test(i))).toEqual([])
    expect(inputs.filter((i) => i.startsWith("node:"))).toEqual([])
    const bytes = out.outputFiles[0]?.contents.length ?? 0
    console.log(`client entry: ${(bytes / 1024).toFixed(1)} KB minified`)
    expect(bytes).toBeGreaterThan(0)
  })
})
