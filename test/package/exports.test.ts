// The published shape: `npm run build` emits JS and .d.ts for every entry in the exports map, each entry loads,
// and the core entry pulls in no storage client library.
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { build } from "esbuild"
import { beforeAll, describe, expect, it } from "vitest"

type Exports = Record<string, string | { types: string; default: string }>
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as {
  exports: Exports
  bin: Record<string, string>
}

// The guard families that are entries of their own beside the core entry (`mycelium-runtime/tools`, …).
const familyEntries = () =>
  ["./tools", "./transcript", "./receipts", "./tasks", "./state"].map((name) => {
    const target = pkg.exports[name]
    if (typeof target !== "object") throw new Error(`package.json exports has no ${name}`)
    return target.default
  })

describe("package exports", () => {
  beforeAll(() => {
    execFileSync("npm", ["run", "build"], { stdio: "pipe" })
  }, 120_000)

  it("every entry has its JS and its types", () => {
    for (const [name, target] of Object.entries(pkg.exports)) {
      if (typeof target === "string") continue
      expect(existsSync(target.default), `${name} → ${target.default}`).toBe(true)
      expect(existsSync(target.types), `${name} → ${target.types}`).toBe(true)
    }
    expect(existsSync(pkg.bin.mycelium as string)).toBe(true)
  })

  it("every entry loads in Node (the Durable Object one needs workerd and is loaded there by its tests)", async () => {
    for (const [name, target] of Object.entries(pkg.exports)) {
      if (typeof target === "string" || name.includes("durable-object")) continue
      const mod = (await import(/* @vite-ignore */ `../../${target.default}`)) as Record<string, unknown>
      expect(Object.keys(mod).length, name).toBeGreaterThan(0)
    }
  })

  /** What a bundle of `entry` reads (esbuild, every import but `external` followed, nothing written). */
  const metafileOf = async (entry: string, external: string[] = []) =>
    (
      await build({
        entryPoints: [entry],
        bundle: true,
        write: false,
        metafile: true,
        platform: "neutral",
        logLevel: "silent",
        external,
      })
    ).metafile

  /** The files a bundle of `entry` reads. */
  const bundledInputs = async (entry: string): Promise<string[]> =>
    Object.keys((await metafileOf(entry)).inputs)

  it("the core entry and each guard family's entry bundle without any storage client or Node built-in", async () => {
    for (const entry of ["dist/index.js", ...familyEntries()]) {
      const inputs = await bundledInputs(entry)
      expect(
        inputs.filter((f) => f.includes("node_modules") || f.startsWith("node:")),
        entry,
      ).toEqual([])
    }
  })

  // Agent frameworks are optional peers: the core must never load one, and each integration imports its
  // framework for types only, so `import "mycelium-runtime/integrations/<name>"` works before the app loads it.
  // The one exception is lazy: the LangGraph glue imports the application's own LangGraph when a replay returns a
  // stored Command or message (src/integrations/langgraph-replay.ts).
  const frameworks = ["ai", "@ai-sdk/*", "@langchain/*", "@openai/agents", "openai"]
  const isFramework = (path: string) =>
    frameworks.some((fw) =>
      fw.endsWith("*") ? path.startsWith(fw.slice(0, -1)) : path === fw || path.startsWith(`${fw}/`),
    )

  /** Every import of a framework that a bundle of `entry` makes, as `kind path (from file)`. */
  const frameworkImports = async (entry: string): Promise<string[]> => {
    const { inputs } = await metafileOf(entry, frameworks)
    return Object.entries(inputs).flatMap(([file, input]) =>
      input.imports.filter((i) => isFramework(i.path)).map((i) => `${i.kind} ${i.path} (from ${file})`),
    )
  }

  it("neither the core, a guard family's entry nor any integration entry loads an agent framework up front", async () => {
    const entries = [
      "dist/index.js",
      ...familyEntries(),
      ...Object.entries(pkg.exports)
        .filter(([name]) => name.startsWith("./integrations/"))
        .map(([, t]) => (t as { default: string }).default),
    ]
    expect(entries.length).toBeGreaterThan(6)
    for (const entry of entries) {
      const lazy = entry.endsWith("/langgraph.js")
        ? [
            "dynamic-import @langchain/langgraph (from dist/integrations/langgraph-replay.js)",
            "dynamic-import @langchain/core/load (from dist/integrations/langgraph-replay.js)",
            "dynamic-import @langchain/core/load (from dist/integrations/langgraph-replay.js)",
          ]
        : []
      expect(await frameworkImports(entry), entry).toEqual(lazy)
    }
  })
})
