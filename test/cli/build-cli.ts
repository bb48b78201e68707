// Global setup of the node project: bundles the CLI from source once per run. The CLI tests spawn it about 300
// times, and under tsx each spawn spent about 0.7 s transpiling (three times that on a loaded 2-core CI machine),
// most of those tests' time. `import.meta.url` is pinned to src/cli/main.ts (the only modules that read it sit
// beside it), so the bundle reads the same package.json and prints the same checkout hints as `tsx src/cli/main.ts`.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { build } from "esbuild"
import type { TestProject } from "vitest/node"
import { peerDependencies } from "../../package.json" with { type: "json" }
import { nodeBundle } from "../node-bundle.ts"

export default async function setup(project: TestProject): Promise<() => void> {
  const cache = resolve("node_modules/.cache")
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, "mycelium-cli-"))
  const main = resolve("src/cli/main.ts")
  await build({
    ...nodeBundle,
    entryPoints: [main],
    splitting: true,
    // zod and yaml bundled in too: each spawn then loads one file, not their hundreds (0.25 s less CPU a spawn here).
    // The optional peers stay packages, resolved from this repository's node_modules, so a test can hide one.
    external: Object.keys(peerDependencies),
    outdir: dir,
    // .mjs: node_modules/.cache has no package.json with a "type".
    outExtension: { ".js": ".mjs" },
    define: { "import.meta.url": JSON.stringify(pathToFileURL(main).href) },
    logLevel: "warning",
  })
  project.provide("cliMain", join(dir, "main.mjs"))
  return () => rmSync(dir, { recursive: true, force: true })
}
