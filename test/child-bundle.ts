// Child scripts a test spawns, bundled by esbuild instead of run under `node --import tsx`: tsx spent about 0.6 s of
// CPU on each spawn loading the sources, and some files spawn dozens; a bundle boots in tens of milliseconds.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join, resolve } from "node:path"
import { buildSync } from "esbuild"
import { afterAll } from "vitest"
import { nodeBundle } from "./node-bundle.ts"

/**
 * Call at a file's top level: a function from a TypeScript child script (a path from the repository root, or
 * absolute) to one ESM file that `node` runs, built on first use and removed after the file's tests.
 */
export function childBundles(): (entry: string) => string {
  const built = new Map<string, string>()
  let dir: string | undefined
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  return (entry) => {
    const path = resolve(entry)
    const known = built.get(path)
    if (known) return known
    dir ??= mkdtempSync(join(tmpdir(), "mycelium-child-"))
    const outfile = join(dir, `${built.size}-${basename(path, ".ts")}.mjs`)
    buildSync({ ...nodeBundle, entryPoints: [path], outfile })
    built.set(path, outfile)
    return outfile
  }
}
